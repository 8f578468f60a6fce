# queen — build, test, run, bench. GNU make + pkg-config; see README.md.
.DEFAULT_GOAL := all
SHELL := /bin/bash
# A Node.js, a Go and a Rust toolchain that scripts/install-deps.sh brought (when the ones found
# are older than the tests need) come first for every recipe: tests, bench and npm.
export PATH := $(CURDIR)/.tools/rust/bin:$(CURDIR)/.tools/go/bin:$(CURDIR)/.tools/node/bin:$(PATH)

CC      ?= cc
FUZZCC  ?= clang
PKGS    := libuv libh2o libpq libcrypto libzstd zlib snappy libjwt libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null | sed 's/-I/-isystem /g')
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
WARN    := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wmissing-prototypes -Wstrict-prototypes \
           -Wformat=2 -Wno-format-nonliteral -Wvla -Wundef
BASE    := -std=c17 -D_GNU_SOURCE -Isrc -Ibuild/gen $(WARN) $(PKG_CFLAGS) -g -MMD -MP
CFLAGS_release := $(BASE) -O2
CFLAGS_asan    := $(BASE) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_asan   := -fsanitize=address,undefined
LIBS    := $(PKG_LIBS) -lpthread -lm

# V=1 shows every command
ifeq ($(V),1)
Q :=
else
Q := @
endif

LIB_SRC := $(shell find src -name '*.c' ! -path src/main.c | sort)
GEN_SRC := build/gen/migrations.c
UNIT_SRC := $(wildcard tests/unit/test_*.c)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
MIGRATIONS := $(sort $(wildcard src/db/migrations/*.sql))
FUNCTIONS := $(sort $(wildcard src/db/functions/*.sql))

obj = $(patsubst src/%.c,build/$(1)/obj/%.o,$(LIB_SRC)) build/$(1)/obj/gen/migrations.o

.PHONY: all deps test-deps run test unit fuzz fuzz-smoke integration py-integration sdk-rust sdk-js sdk-go bench bench-sdk-rust bench-sdk-go clean format release asan
all: build/release/queen

release: build/release/queen
asan: build/asan/queen

deps:
	@scripts/install-deps.sh run
test-deps:
	@scripts/install-deps.sh test

build/gen/migrations.c: $(MIGRATIONS) $(FUNCTIONS) src/db/retired.sql scripts/embed-sql.sh
	@mkdir -p $(@D)
	scripts/embed-sql.sh $(MIGRATIONS) -- $(FUNCTIONS) -- src/db/retired.sql > $@.tmp && mv $@.tmp $@

define variant
build/$(1)/obj/%.o: src/%.c
	@mkdir -p $$(@D)
	@[ -n "$(Q)" ] && echo "  CC [$(1)] $$<" || true
	$(Q)$$(CC) $$(CFLAGS_$(1)) -c $$< -o $$@
build/$(1)/obj/gen/migrations.o: build/gen/migrations.c
	@mkdir -p $$(@D)
	$(Q)$$(CC) $$(CFLAGS_$(1)) -c $$< -o $$@
build/$(1)/obj/main.o: src/main.c
	@mkdir -p $$(@D)
	$(Q)$$(CC) $$(CFLAGS_$(1)) -c $$< -o $$@
build/$(1)/queen: build/$(1)/obj/main.o $(call obj,$(1))
	@[ -n "$(Q)" ] && echo "  LD [$(1)] $$@" || true
	$(Q)$$(CC) $$(LDFLAGS_$(1)) -o $$@ $$(filter %.o,$$^) $$(LIBS)
build/$(1)/tools/%: tests/tools/%.c $(call obj,$(1))
	@mkdir -p $$(@D)
	@[ -n "$(Q)" ] && echo "  LD [$(1)] $$@" || true
	$(Q)$$(CC) $$(CFLAGS_$(1)) $$(LDFLAGS_$(1)) -o $$@ $$(filter %.c %.o,$$^) $$(LIBS)
build/$(1)/tests/%: tests/unit/%.c $(call obj,$(1))
	@mkdir -p $$(@D)
	@[ -n "$(Q)" ] && echo "  LD [$(1)] $$@" || true
	$(Q)$$(CC) $$(CFLAGS_$(1)) $$(LDFLAGS_$(1)) -o $$@ $$(filter %.c %.o,$$^) $$(LIBS) -lcmocka
endef
$(eval $(call variant,release))
$(eval $(call variant,asan))

UNIT_BINS := $(patsubst tests/unit/%.c,build/asan/tests/%,$(UNIT_SRC))
# the unit tests that start a private PostgreSQL link tests/unit/support/pgtest.c
PGTEST_BINS := test_db_results test_db_statements test_kv_sync test_lockorder
$(foreach v,release asan,$(addprefix build/$(v)/tests/,$(PGTEST_BINS))): tests/unit/support/pgtest.c \
  tests/unit/support/pgtest.h
# the unit tests that build results in memory (no server) link tests/unit/support/pgres.c
PGRES_BINS := test_answers_log test_admin_answers
$(foreach v,release asan,$(addprefix build/$(v)/tests/,$(PGRES_BINS))): tests/unit/support/pgres.c \
  tests/unit/support/pgres.h

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do ASAN_OPTIONS=detect_leaks=1 $$t > $$t.log 2>&1 || { cat $$t.log; exit 1; }; \
	  echo "  unit $$(basename $$t): $$(grep -c '^\[       OK \]' $$t.log) passed"; done

# Fuzz targets (libFuzzer, clang). `make fuzz` runs each for FUZZ_SECONDS; make test runs a
# bounded smoke pass over the seed corpus plus fresh inputs.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 20000
FUZZ_FLAGS := -std=c17 -D_GNU_SOURCE -Isrc -Ibuild/gen -g -O1 -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS)
# the library is compiled once for every target (instrumented for coverage, without libFuzzer's
# main), and each target links it: not once per target
FUZZ_OBJ_FLAGS := -std=c17 -D_GNU_SOURCE -Isrc -Ibuild/gen -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
                  $(PKG_CFLAGS) -MMD -MP
FUZZ_OBJS := $(patsubst src/%.c,build/fuzz/obj/%.o,$(LIB_SRC)) build/fuzz/obj/gen/migrations.o
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
.SECONDARY: $(FUZZ_OBJS)
build/fuzz/obj/%.o: src/%.c
	@mkdir -p $(@D)
	@[ -n "$(Q)" ] && echo "  CC [fuzz] $<" || true
	$(Q)$(FUZZCC) $(FUZZ_OBJ_FLAGS) -c $< -o $@
build/fuzz/obj/gen/migrations.o: build/gen/migrations.c
	@mkdir -p $(@D)
	$(Q)$(FUZZCC) $(FUZZ_OBJ_FLAGS) -c $< -o $@
build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJS)
	@mkdir -p $(@D)
	@[ -n "$(Q)" ] && echo "  FUZZ $@" || true
	$(Q)$(FUZZCC) $(FUZZ_FLAGS) -MMD -MP -MF build/fuzz/$*.d -o $@ $< $(FUZZ_OBJS) $(LIBS)
fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p build/fuzz/corpus/$$n; \
	  $$f -max_total_time=$(FUZZ_SECONDS) build/fuzz/corpus/$$n tests/fuzz/seeds/$$n; done
fuzz-smoke: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p build/fuzz/corpus/$$n; \
	  echo "== $$n"; $$f -runs=$(FUZZ_RUNS) -seed=1 -artifact_prefix=build/fuzz/$$n- build/fuzz/corpus/$$n tests/fuzz/seeds/$$n \
	    > build/fuzz/$$n.log 2>&1 || { tail -40 build/fuzz/$$n.log; exit 1; }; tail -1 build/fuzz/$$n.log; done

TOOLS := $(patsubst tests/tools/%.c,build/asan/tools/%,$(wildcard tests/tools/*.c))

integration: build/asan/queen build/release/queen $(TOOLS)
	@scripts/run-integration.sh

# the real 2.x client (queen-mq, PyPI) against the sanitizer build: tests/py, pytest in build/venv
py-integration: build/asan/queen
	@scripts/run-py.sh

test: test-deps
	@$(MAKE) --no-print-directory build/release/queen build/asan/queen $(TOOLS)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory integration
	@$(MAKE) --no-print-directory py-integration
	@$(MAKE) --no-print-directory sdk-rust
	@$(MAKE) --no-print-directory sdk-js
	@$(MAKE) --no-print-directory sdk-go

# the Rust SDK (clients/rust): cargo test and the spec's example against the sanitizer build
# with its own PostgreSQL; cargo builds in clients/rust/target
sdk-rust: build/asan/queen
	@scripts/check-cargo.sh
	@node clients/rust/scripts/test-with-broker.mjs

# the JavaScript SDK (clients/js): tsc over index.d.ts, then node --test (unit tests, the
# config_hash vectors, and the broker tests against the sanitizer build with its own PostgreSQL)
sdk-js: build/asan/queen
	@cd clients/js && node_modules/.bin/tsc -p tsconfig.json && node --test --test-concurrency=2 test/*.test.mjs

# the Go SDK (clients/go, stdlib only): go vet, go test (unit tests and the broker tests, which
# read QUEEN_URL) and the examples against the sanitizer build with its own PostgreSQL
sdk-go: build/asan/queen
	@scripts/check-go.sh
	@node clients/go/scripts/test-with-broker.mjs

run: deps
	@$(MAKE) --no-print-directory build/release/queen
	exec build/release/queen

bench: test-deps
	@$(MAKE) --no-print-directory build/release/queen
	@bench/run.sh $(BENCH_ARGS)
	@$(MAKE) --no-print-directory bench-sdk-rust
	@$(MAKE) --no-print-directory bench-sdk-go

# the Rust streams bench: source records/s of the spec's chain, 16 partitions, batch 50 and 500
bench-sdk-rust: build/release/queen
	@scripts/check-cargo.sh
	@QUEEN_BIN=$(CURDIR)/build/release/queen node clients/rust/scripts/test-with-broker.mjs --bench

# the Go streams bench (clients/go/examples/bench_streams): the same chain and figure
bench-sdk-go: build/release/queen
	@scripts/check-go.sh
	@QUEEN_BIN=$(CURDIR)/build/release/queen node clients/go/scripts/test-with-broker.mjs --bench

format:
	clang-format -i $$(find src tests -name '*.[ch]')

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
