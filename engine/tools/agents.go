package tools

import (
	"time"

	"countersign/engine"
)

// editorExamples returns the example prompts of both editor presets.
func editorExamples() []string {
	return []string{
		"How many words are on the pricing page?",
		"Publish the about page.",
		"Check the word count of the release notes and publish them.",
		"Create a page announcing the winter sale, then publish it.",
		"Publish all draft pages.",
		"Update the pricing page to say the Team plan now costs $12 per seat.",
		"Delete the old announcement page.",
		// There is no offers page, and there are three drafts: the
		// agent asks the operator which page is meant.
		"Set the price on the offers page to $12.",
		"Publish a draft page.",
	}
}

const editorInstructions = `You are the content editor of a small website whose pages live in a workspace.
Look pages up with the read-only tools before you change them, and change only what the user asked for.
If the request names a page that does not exist, or could mean more than one page, do not guess:
ask the operator with ask_operator, offering the likely slugs as options, and go on with the answer.
Every create, update, publish and delete waits for a person, who may approve it, deny it,
edit its arguments before it runs, or answer in its place.
If a change is denied, do not retry it: say it was denied and why, then go on with the rest or stop.
If a call was edited, report what actually ran, not what you proposed.
If the person answered in place of a call, it did not run: pass their answer on.
Answer briefly and name the pages you touched.`

const researcherInstructions = `You answer questions about the pages of a small website.
Use the tools to list, read and search pages, count words and tell the time; never guess what a page says.
You cannot change pages. If you are asked to, say so and suggest asking the content editor.
Answer briefly and name the pages you used.`

// Agents returns the presets, all over ws: editor, editor-4eyes (the same
// with a second approver) and researcher (read-only), without policies.
// The server reads its agents from an agents file (package agentsfile),
// whose built-in one holds these three with the same texts, tools and
// examples, and more; the engine's tests, which may not read YAML, use
// these, and agentsfile's tests check the two agree.
// The editors may ask the operator (ask_operator) rather than guess which
// page a change is for. The researcher may not: its runs never wait for a
// person, and a wrong guess of a read-only agent changes nothing and shows
// in its answer. now is the clock of current_time; nil means time.Now.
func Agents(ws Workspace, now func() time.Time) []engine.Agent {
	editorTools := func() []engine.Tool { return append(All(ws, now), AskOperator()) }
	return []engine.Agent{
		{
			Name:         "editor",
			Title:        "Content editor",
			Description:  "Reads and edits the website's pages and asks you when a request is unclear; every change waits for your approval.",
			Instructions: editorInstructions,
			Tools:        editorTools(),
			Examples:     editorExamples(),
		},
		{
			Name:           "editor-4eyes",
			Title:          "Content editor (four-eyes)",
			Description:    "Reads and edits the website's pages and asks when a request is unclear; every change needs the approval of someone other than you.",
			Instructions:   editorInstructions,
			Tools:          editorTools(),
			SecondApprover: true,
			Examples:       editorExamples(),
		},
		{
			Name:         "researcher",
			Title:        "Researcher (read-only)",
			Description:  "Answers questions about the website's pages and never changes them.",
			Instructions: researcherInstructions,
			Tools:        ReadTools(ws, now),
			Examples: []string{
				"How many words are on the pricing page?",
				"Search the pages for refund.",
				"What time is it?",
				"List all pages.",
			},
		},
	}
}

// AgentByName returns the agent of agents called name, and whether there is
// one.
func AgentByName(agents []engine.Agent, name string) (engine.Agent, bool) {
	for _, a := range agents {
		if a.Name == name {
			return a, true
		}
	}
	return engine.Agent{}, false
}
