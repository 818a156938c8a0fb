// Package tools holds the built-in tools of countersign and the demo
// workspace they act on: a handful of web pages that agents list, read,
// search, create, update, publish and delete.
//
// The package declares the Workspace it needs; Memory implements it in
// memory for tests and demos, and package store implements it on SQLite.
// Read-only tools run freely. The four write tools implement
// engine.RequiresApproval, so a person approves every call, and
// engine.Previewer, so that person sees what the call would change first.
// ask_operator implements engine.AsksOperator: the agent asks the operator
// a question, and the operator's answer is the call's result.
//
// Tool results are compact JSON text, which models (the offline demo model
// above all) parse.
package tools
