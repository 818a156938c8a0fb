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
	}
}

const editorInstructions = `You are the content editor of a small website whose pages live in a workspace.
Look pages up with the read-only tools before you change them, and change only what the user asked for.
Every create, update, publish and delete waits for a person's approval and may be denied.
If a change is denied, do not retry it: say it was denied and why, then go on with the rest or stop.
Answer briefly and name the pages you touched.`

const researcherInstructions = `You answer questions about the pages of a small website.
Use the tools to list, read and search pages, count words and tell the time; never guess what a page says.
You cannot change pages. If you are asked to, say so and suggest asking the content editor.
Answer briefly and name the pages you used.`

// Agents returns the presets the playground offers, all over ws: editor,
// editor-4eyes (the same with a second approver) and researcher (read-only).
// now is the clock of current_time; nil means time.Now.
func Agents(ws Workspace, now func() time.Time) []engine.Agent {
	return []engine.Agent{
		{
			Name:         "editor",
			Title:        "Content editor",
			Description:  "Reads and edits the website's pages; every change waits for your approval.",
			Instructions: editorInstructions,
			Tools:        All(ws, now),
			Examples:     editorExamples(),
		},
		{
			Name:           "editor-4eyes",
			Title:          "Content editor (four-eyes)",
			Description:    "Reads and edits the website's pages; every change needs the approval of someone other than you.",
			Instructions:   editorInstructions,
			Tools:          All(ws, now),
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
