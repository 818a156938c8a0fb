package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// runNew shows the playground.
func (s *server) runNew(c echo.Context) error {
	v := s.newRunView(c.QueryParam("agent"), c.QueryParam("model"), "")
	return render(c, http.StatusOK, views.NewRunPage(s.layout(c, "Playground", "playground"), v))
}

func (s *server) newRunView(agent, model, prompt string) views.NewRunView {
	v := views.NewRunView{Agent: agent, Model: model, Prompt: prompt}
	for _, a := range s.cfg.Agents {
		v.Agents = append(v.Agents, views.AgentOption{Name: a.Name, Title: a.Title, Description: a.Description,
			Examples: a.Examples, SecondApprover: s.rt.NeedsSecondApprover(a.Name), Servers: s.servers(a.Name)})
	}
	for _, m := range s.cfg.Models {
		v.Models = append(v.Models, views.ModelOption{Name: m.Name, Description: m.Description})
	}
	if v.Agent == "" {
		v.Agent = s.cfg.Agents[0].Name
	}
	if v.Model == "" {
		// The agent's default model, when this server offers it.
		if a, ok := s.rt.Agent(v.Agent); ok && a.DefaultModel != "" {
			for _, m := range s.cfg.Models {
				if m.Name == a.DefaultModel {
					v.Model = m.Name
				}
			}
		}
	}
	if v.Model == "" {
		v.Model = s.cfg.Models[0].Name
	}
	return v
}

// runCreate starts a run and redirects to it. A refused start shows the form
// again with what was typed and why.
func (s *server) runCreate(c echo.Context) error {
	u, _ := currentUser(c)
	agent, model := c.FormValue("agent"), c.FormValue("model")
	prompt := strings.TrimSpace(c.FormValue("prompt"))
	run, err := s.rt.StartRun(c.Request().Context(), engine.NewRun{Agent: agent, Model: model, Prompt: prompt, InitiatedBy: u.Name})
	if err != nil {
		// A refused start shows the form again; anything else is an error page.
		if he := classify(err); he.status == http.StatusUnprocessableEntity {
			v := s.newRunView(agent, model, strings.ToValidUTF8(prompt, "\uFFFD"))
			v.Error = he.message
			return render(c, he.status, views.NewRunPage(s.layout(c, "Playground", "playground"), v))
		}
		return err
	}
	s.log.Info("run started", "run", run.ID, "agent", agent, "model", model, "by", u.Name)
	return c.Redirect(http.StatusSeeOther, "/runs/"+run.ID)
}
