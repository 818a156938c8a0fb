package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// jsonEncoder returns an encoder that writes JSON as the API sends it.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// writeJSON answers with v as JSON.
func writeJSON(c echo.Context, status int, v any) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	return jsonEncoder(c.Response()).Encode(v)
}

// decodeJSON reads the request body into v strictly: the body must be
// declared as JSON (415), be one JSON value (400) of the expected shape
// with no unknown field (422 naming the field), and fit the body limit
// (413).
func decodeJSON(c echo.Context, v any) error {
	mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if err != nil || (mt != echo.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json")) {
		return &apiError{status: http.StatusUnsupportedMediaType, kind: "unsupported-media-type", title: "Unsupported media type",
			message: "Send the body as JSON, with Content-Type: application/json."}
	}
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err)
		}
		return malformed("The body must be one JSON object, with nothing after it.")
	}
	return nil
}

// jsonError says what is wrong with a body that did not decode.
func jsonError(err error) error {
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &mbe):
		return echo.ErrStatusRequestEntityTooLarge
	case errors.Is(err, io.EOF):
		return malformed("The body is empty: send a JSON object.")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return malformed("The body ends in the middle of its JSON.")
	case errors.As(err, &syn):
		return malformed(fmt.Sprintf("The body is not valid JSON (at byte %d).", syn.Offset))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badField(http.StatusUnprocessableEntity, "invalid-input", "body", "The body must be a JSON object.")
		}
		return badField(http.StatusUnprocessableEntity, "invalid-input", field,
			fmt.Sprintf("%s must be %s, not %s.", field, jsonKind(typ.Type.Kind().String()), typ.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return badField(http.StatusUnprocessableEntity, "unknown-field", name, fmt.Sprintf("There is no field %q here.", name))
	}
	return malformed("The body could not be read as JSON.")
}

// jsonKind names a Go kind as JSON does.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// malformed refuses a body that is not JSON.
func malformed(message string) error {
	return &apiError{status: http.StatusBadRequest, kind: "malformed-json", title: "Not JSON", message: message}
}
