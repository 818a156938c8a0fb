package tools

import "time"

// SeedPages returns the demo workspace: the small website of a fictional
// note-taking product. The demo model and the examples of the agent presets
// rely on these slugs: welcome, pricing, about, faq, release-notes and
// old-announcement.
func SeedPages() []Page {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 9, 30, 0, 0, time.UTC) }
	return []Page{
		{
			Slug:   "welcome",
			Title:  "Welcome to Acme Notes",
			Status: StatusPublished,
			Body: `# Welcome to Acme Notes

Acme Notes is a shared notebook for small teams.
Write a page, share it with your team and keep everyone on the same page.

## Getting started
- Create your first page from the dashboard.
- Invite teammates from Settings > Members.
- Publish a page when it is ready for everyone to read.

Questions? Read the FAQ or write to support@acme.example.
`,
			UpdatedAt: day(2025, time.September, 2),
		},
		{
			Slug:   "pricing",
			Title:  "Pricing",
			Status: StatusPublished,
			Body: `# Pricing

Acme Notes has three plans. Prices are in US dollars and exclude tax.

- Free: up to 3 users and 100 pages.
- Team: unlimited pages, shared folders and version history.
  The Team plan costs $10 per seat per month, billed monthly or yearly.
- Enterprise: custom pricing, single sign-on and an uptime SLA.

Yearly billing saves two months on the Team plan.
Every paid plan starts with a 14-day free trial; no credit card needed.
`,
			UpdatedAt: day(2025, time.November, 14),
		},
		{
			Slug:   "about",
			Title:  "About us",
			Status: StatusDraft,
			Body: `# About us

Acme Notes was founded in 2021 by three engineers who were tired of losing notes in chat threads.
Today we are a remote team of twelve people across five time zones.

## What we believe
- Writing things down beats another meeting.
- Software should be fast, quiet and respectful of your time.
- Your data is yours: export everything, any time.

Our office is in Lisbon, and we are hiring.
`,
			UpdatedAt: day(2026, time.January, 8),
		},
		{
			Slug:   "faq",
			Title:  "Frequently asked questions",
			Status: StatusPublished,
			Body: `# Frequently asked questions

## Can I try Acme Notes for free?
Yes. The Free plan never expires, and paid plans start with a 14-day trial.

## How do refunds work?
If you are not happy, ask for a refund within 30 days of your first payment and we return it in full.

## Can I export my pages?
Yes, as Markdown or PDF, from Settings > Export.

## Where is my data stored?
In data centres in the European Union, encrypted at rest and in transit.
`,
			UpdatedAt: day(2025, time.October, 21),
		},
		{
			Slug:   "release-notes",
			Title:  "Release notes: version 1.2",
			Status: StatusDraft,
			Body: `# Release notes: version 1.2

- New: full-text search across all pages.
- New: dark mode follows your system setting.
- Improved: pages load twice as fast on slow connections.
- Fixed: the editor no longer loses the cursor after pasting a table.
- Fixed: exported PDFs keep their page breaks.

Version 1.2 rolls out to every workspace this week.
`,
			UpdatedAt: day(2026, time.February, 3),
		},
		{
			Slug:   "old-announcement",
			Title:  "Holiday support hours (December 2023)",
			Status: StatusDraft,
			Body: `# Holiday support hours

Our support team is taking a short break over the holidays.
From December 24, 2023 to January 2, 2024 we answer email within two working days.
Live chat is closed during this period.

Happy holidays from everyone at Acme Notes!
`,
			UpdatedAt: day(2023, time.December, 15),
		},
	}
}
