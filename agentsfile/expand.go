package agentsfile

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// reVar is the name of a variable in ${NAME}.
var reVar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expand returns s with each ${NAME} replaced by get(NAME) and each $$ by a
// single $, and the names of the variables it refers to. A variable that is
// unset or empty, a ${ without its }, and a $ followed by anything else are
// errors, so that a value never reaches a server half expanded.
func expand(s string, get func(string) string) (string, []string, error) {
	var b strings.Builder
	var names []string
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), names, nil
		}
		b.WriteString(s[:i])
		s = s[i+1:]
		switch {
		case strings.HasPrefix(s, "$"):
			b.WriteByte('$')
			s = s[1:]
		case strings.HasPrefix(s, "{"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", names, errors.New("a ${ without its closing }: write ${NAME}, or $$ for a dollar sign")
			}
			name := s[1:end]
			if !reVar.MatchString(name) {
				return "", names, fmt.Errorf("${%s}: a variable's name is letters, digits and underscores", name)
			}
			names = append(names, name)
			v := get(name)
			if v == "" {
				return "", names, fmt.Errorf("${%s} is not set or is empty: set the environment variable %s", name, name)
			}
			b.WriteString(v)
			s = s[end+1:]
		default:
			return "", names, errors.New("a lone $: write ${NAME} for a variable, or $$ for a dollar sign")
		}
	}
}

// lookup returns the value of a variable: the app's own (Env.Vars) or else
// the environment's.
func (p *parser) lookup(name string) string {
	if v := p.env.Vars[name]; v != "" {
		return v
	}
	if p.env.Getenv != nil {
		return p.env.Getenv(name)
	}
	return ""
}
