package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// checkArgs is the engine's ArgsChecker: it validates an operator's edited
// arguments against the tool's JSON Schema with a well-kept validator and
// says, for a person, which field is wrong and why ("at /slug: got number,
// want string"). A schema that does not compile refuses every edit rather
// than letting one run unchecked.
func checkArgs(schema, args json.RawMessage) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("the tool's schema is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", doc); err != nil {
		return fmt.Errorf("the tool's schema: %w", err)
	}
	sch, err := c.Compile("tool.json")
	if err != nil {
		return fmt.Errorf("the tool's schema does not compile: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var msgs []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		at := u.InstanceLocation
		if at == "" {
			at = "/"
		}
		msgs = append(msgs, "at "+at+": "+u.Error.String())
	}
	if len(msgs) == 0 {
		return errors.New(ve.Error())
	}
	return errors.New(strings.Join(msgs, "; "))
}
