# countersign: `make run` serves the playground, `make test` runs every test.
GO      ?= go
BIN     := bin/countersign
HTMX    := static/vendor/htmx.min.js
AXE     := node_modules/axe-core/axe.min.js
# The reference MCP filesystem server of the files agent, from the npm
# registry like htmx (package-lock.json pins it).
MCPFS   := node_modules/.bin/mcp-server-filesystem
# npm ci writes node_modules/.package-lock.json; it marks node_modules as
# installed from the current package-lock.json.
NODE_STAMP := node_modules/.package-lock.json
FUZZTIME ?= 10s

export CGO_ENABLED := 1

.PHONY: run build test vet staticcheck tidy-check fmt-check generate generate-check fuzz chaos bench assets screenshots clean

run: build
	./$(BIN) serve

build: assets
	$(GO) build -o $(BIN) .

# htmx comes from the npm registry (package-lock.json pins it) and is copied
# into static/vendor at build time; it is never committed. axe-core, a
# devDependency, stays in node_modules: only the browser tests read it
# (a11y_browser_test.go injects it into the page), the app never serves it.
assets: $(HTMX) $(AXE) $(MCPFS)

$(NODE_STAMP): package.json package-lock.json
	npm ci --include=dev --no-audit --no-fund --loglevel=error
	touch $@

$(AXE) $(MCPFS): $(NODE_STAMP)
	@test -f $@ || { echo "npm ci did not install $@"; exit 1; }

$(HTMX): $(NODE_STAMP)
	mkdir -p static/vendor
	cp node_modules/htmx.org/dist/htmx.min.js $(HTMX)

generate:
	$(GO) tool templ generate

# The committed *_templ.go files must be what the pinned generator writes.
generate-check:
	@$(GO) tool templ generate >/dev/null 2>&1
	@if [ -n "$$(git status --porcelain -- '*_templ.go')" ]; then \
		echo "templ generate changed generated files; run 'make generate' and commit them:"; \
		git status --porcelain -- '*_templ.go'; exit 1; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# staticcheck is pinned in go.mod as a tool, like templ.
staticcheck:
	$(GO) tool staticcheck ./...

# go.mod and go.sum must be what go mod tidy writes.
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy; run 'go mod tidy' and commit them"; exit 1; }

test: assets fmt-check generate-check vet staticcheck tidy-check
	$(GO) test -race -count=1 ./...
	$(GO) test -run='^$$' -fuzz=FuzzDecodeState -fuzztime=$(FUZZTIME) ./engine

# Longer fuzzing than make test's short pass: the state decoder, then the
# decision and run routes of the real app.
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecodeState -fuzztime=5m ./engine
	$(GO) test -run='^$$' -fuzz=FuzzToolResume -fuzztime=2m ./web
	$(GO) test -run='^$$' -fuzz=FuzzRunRoutes -fuzztime=2m ./web
	$(GO) test -run='^$$' -fuzz=FuzzAPIDecision -fuzztime=2m ./web

# The README's screenshots (docs/screenshots/*.png), taken by a browser test
# of the real app in headless Chromium at 1280 px. Without the flag the same
# test takes them into a temporary folder and only checks them.
screenshots: assets
	$(GO) test . -run '^TestScreenshots$$' -count=1 -screenshots=docs/screenshots

# The whole kill-point matrix of the crash test (make test runs a short form).
chaos:
	$(GO) test -count=1 -run TestCrashRecovery -crash.full -v .

# make bench: the Go benchmarks (-count runs each, medians by bench/report)
# and the load programs of bench/ against the real binary, on loopback; about
# ten minutes on two cores. Figures and goals end in $(BENCH_OUT)/summary.md;
# docs/BENCHMARKS.md says what they mean. Each bench-* target runs alone too.
BENCH_OUT   ?= bin/bench
BENCH_COUNT ?= 5
BENCH_1M    := $(BENCH_OUT)/history-1m.db

.PHONY: bench-go bench-pollers bench-history bench-purge bench-rss bench-makerun bench-report

bench: build
	@mkdir -p $(BENCH_OUT) && rm -f $(BENCH_OUT)/*.json $(BENCH_OUT)/go.txt $(BENCH_OUT)/summary.md
	@$(MAKE) --no-print-directory bench-go bench-pollers bench-history bench-purge bench-rss bench-makerun bench-report

bench-go: SHELL := bash
bench-go:
	@mkdir -p $(BENCH_OUT)
	set -o pipefail; $(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCH_COUNT) ./... | tee $(BENCH_OUT)/go.txt

bench-pollers: build
	$(GO) run ./bench/pollers -bin $(BIN) -out $(BENCH_OUT)

# bench-history keeps its million runs for bench-purge, which purges them.
bench-history:
	$(GO) run ./bench/history -keep $(BENCH_1M) -out $(BENCH_OUT)

bench-purge: build
	@if [ -f $(BENCH_1M) ]; then db="-db $(BENCH_1M)"; fi; \
	$(GO) run ./bench/purge -bin $(BIN) $$db -out $(BENCH_OUT)
	@rm -f $(BENCH_1M) $(BENCH_1M)-wal $(BENCH_1M)-shm

bench-rss: build
	$(GO) run ./bench/rss -bin $(BIN) -out $(BENCH_OUT)

bench-makerun:
	$(GO) run ./bench/makerun -repo . -out $(BENCH_OUT)

bench-report:
	@$(GO) run ./bench/report -go $(BENCH_OUT)/go.txt -dir $(BENCH_OUT)

clean:
	rm -rf bin node_modules $(HTMX)
