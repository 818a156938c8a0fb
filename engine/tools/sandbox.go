package tools

// SandboxFiles returns the files of the demo sandbox, the folder the file
// assistant's MCP filesystem server works in, by slash-separated path
// relative to it. The demo model and the file assistant's example prompts
// rely on these names and lines.
func SandboxFiles() map[string]string {
	return map[string]string{
		"notes.md": `# Team notes

- The winter sale starts on 1 December.
- The release notes go out with every release.
- Support answers within one working day.
`,
		"todo.md": `# To do

- [ ] buy milk
- [ ] update the pricing page
- [x] publish the about page
`,
		"draft.md": `# Draft

An announcement that is not ready yet.
`,
		"archive/README.md": `Old files go here.
`,
	}
}
