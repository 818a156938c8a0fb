# countersign: `make run` serves the playground, `make test` runs every test.
GO      ?= go
BIN     := bin/countersign
HTMX    := static/vendor/htmx.min.js
FUZZTIME ?= 10s

export CGO_ENABLED := 1

.PHONY: run build test vet fmt-check generate generate-check fuzz chaos bench assets clean

run: build
	./$(BIN) serve

build: assets
	$(GO) build -o $(BIN) .

# htmx comes from the npm registry (package-lock.json pins it) and is copied
# into static/vendor at build time; it is never committed.
assets: $(HTMX)

$(HTMX): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
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

test: assets fmt-check generate-check vet
	$(GO) test -race -count=1 ./...
	$(GO) test -run='^$$' -fuzz=FuzzDecodeState -fuzztime=$(FUZZTIME) ./engine

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecodeState -fuzztime=5m ./engine

# The whole kill-point matrix of the crash test (make test runs a short form).
chaos:
	$(GO) test -count=1 -run TestCrashRecovery -crash.full -v .

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=5 ./...

clean:
	rm -rf bin node_modules $(HTMX)
