package kit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Report is what one load program measured: figures, and the goals of
// issue 7 checked against them. Write prints it and keeps it as JSON in the
// results folder, where bench/report gathers every program's.
type Report struct {
	Program string    `json:"program"`
	At      time.Time `json:"at"`
	Figures []Figure  `json:"figures"`
	Goals   []Goal    `json:"goals"`
	Notes   []string  `json:"notes,omitempty"`
}

// Figure is one measured number.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Goal is a figure with the limit it must not exceed.
type Goal struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Unit  string  `json:"unit"`
	Met   bool    `json:"met"`
}

// NewReport starts the report of a program.
func NewReport(program string) *Report {
	r := &Report{Program: program, At: time.Now().UTC()}
	r.Note("load average at start: %.2f (2 cores; other sessions share this machine)", LoadAvg())
	return r
}

// Add records a figure and prints it.
func (r *Report) Add(name string, v float64, unit string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Unit: unit})
	fmt.Printf("  %-58s %12.3f %s\n", name, v, unit)
}

// Check records a goal met when v <= limit, and prints it.
func (r *Report) Check(name string, v, limit float64, unit string) {
	g := Goal{Name: name, Value: v, Limit: limit, Unit: unit, Met: v <= limit}
	r.Goals = append(r.Goals, g)
	fmt.Printf("  GOAL %-53s %12.3f %s (limit %.3g): %s\n", name, v, unit, limit, MetWord(g.Met))
}

// Note records a remark and prints it.
func (r *Report) Note(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.Notes = append(r.Notes, s)
	fmt.Println("  note:", s)
}

// MetWord is "met" or "MISSED".
func MetWord(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

// Write keeps the report as dir/<program>.json; an empty dir keeps nothing.
func (r *Report) Write(dir string) error {
	r.Note("load average at end: %.2f", LoadAvg())
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, strings.ReplaceAll(r.Program, "/", "-")+".json"), b, 0o644)
}

// Section prints a heading.
func Section(format string, a ...any) {
	fmt.Printf("\n== %s\n", fmt.Sprintf(format, a...))
}
