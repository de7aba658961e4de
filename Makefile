# The two commands of the README: `make run` and `make test`.
# Each first installs the Debian packages fetchrun links against, when they are missing.

# Linked: libcurl, libxml2, libyaml, libsqlite3; the fixture server: zlib, brotli. The end-to-end tests
# also run python3 and git (the example plugins), util-linux's `script` (a terminal), and the
# HTTP/2 fixture server (python3-h2) behind certificates that openssl makes, and a PostgreSQL
# server of their own (the workers' shared state); the monitoring tests check the metrics with
# promtool (Debian's prometheus package); one state test watches the order of fsyncs and renames
# with strace.
DEB_PACKAGES := libcurl4-openssl-dev libxml2-dev libyaml-dev libsqlite3-dev pkg-config zlib1g-dev libbrotli-dev python3 python3-h2 python3-venv openssl postgresql git util-linux prometheus strace
SWIFT ?= swift
CONFIG ?= sources.yaml

.PHONY: run test test-venv test-deps screenshots build deps clean install install-files manual release-icu size deb deb-check scaffold-check embedding-example tsan bench bench-quick bench-one-host bench-leases bench-peers bench-conformance bench-downloads bench-hardening bench-monitoring bench-yardstick bench-pages bench-browser bench-soak fuzz

# Installs the Debian packages named in $(1) that are missing (apt-get update once, first).
define install-missing
	@missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing" >&2; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install-missing,$(DEB_PACKAGES))

# What only the tests use: Debian's chromium, which the render: browser tests start, and the
# dashboard's browser tests and `make screenshots` drive through Playwright.
TEST_DEB_PACKAGES := chromium
test-deps: deps
	$(call install-missing,$(TEST_DEB_PACKAGES))

run: deps
	$(SWIFT) run -c release fetchrun --config $(CONFIG)

build: deps
	$(SWIFT) build

# A hung test fails the run after TEST_TIMEOUT seconds instead of stalling it; output is
# line-buffered so that a log shows how far it got.
TEST_TIMEOUT ?= 1800
# Swift Testing starts every test at once; on two cores, 90 end-to-end tests each starting
# fetchrun (and the unit tests' CPU-bound cases beside them) kept the cooperative pool busy for
# seconds, and the deadline tests measured the queue instead of fetchrun. Eight at a time
# finishes as soon (~18 s) and measures what the tests mean to.
TEST_WIDTH ?= 8
# The tests' scratch files (each test's folder, the fixture servers' certificates, SwiftPM's own
# temporary folders, which its builds leave behind too) go to one folder per run, removed at the
# end whatever the result: tests that fail or are killed cannot tidy up after themselves, and
# run after run they had left thousands of folders in /tmp. It is world-writable like /tmp
# because some tests run fetchrun as another user.
# Two suites run after the others, each on its own. The 2,000-source failover bounds the gaps
# of three workers' schedule: under the whole run's load it reached 4.1 s against its 3.5 s.
# The render: browser tests start Chromium (most of a core to start, ~0.25 CPU-s a page): on
# two cores, beside them, the failover and a download stall's bound missed too.
ALONE_SUITE := WorkerFailoverTests
BROWSER_SUITES := BrowserRenderTests
# The HTML mail tests open each mail in Chromium through Playwright: beside the render: browser
# tests, the extra browsers made those miss their 2 s deadlines (a frozen browser's test waited
# 30 s for a first render), so they run last, on their own.
MAIL_SUITES := HTMLMailTests
# Test-only Python packages, from PyPI into a venv under the build folder: feedparser reads the
# Atom feeds of changes as feed readers do; Playwright drives Debian's chromium (its
# `executable_path`: Playwright's own browsers are never downloaded). Installed once (again
# when a pin changes); the tests find them at TEST_VENV.
TEST_VENV := .build/test-venv
FEEDPARSER_VERSION := 6.0.14
PLAYWRIGHT_VERSION := 1.65.2
test-venv: test-deps
	@$(TEST_VENV)/bin/python3 -c 'import feedparser, importlib.metadata as m; assert feedparser.__version__ == "$(FEEDPARSER_VERSION)"; assert m.version("playwright") == "$(PLAYWRIGHT_VERSION)"' 2>/dev/null || { \
	  python3 -m venv $(TEST_VENV) && $(TEST_VENV)/bin/pip install -q feedparser==$(FEEDPARSER_VERSION) playwright==$(PLAYWRIGHT_VERSION); }

test: deps test-venv
	scratch=$$(mktemp -d "$${TMPDIR:-/tmp}/fetchrun-test-run.XXXXXX") && chmod 1777 "$$scratch" && \
	trap 'rm -rf "$$scratch"' EXIT && trap 'exit 130' INT TERM HUP && \
	export TMPDIR="$$scratch" && \
	$(SWIFT) build --product fetchrun && \
	$(MAKE) manual INSTALL_CONFIGURATION=debug && \
	export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) && \
	timeout -k 30 $(TEST_TIMEOUT) stdbuf -oL -eL $(SWIFT) test --skip '$(ALONE_SUITE)|$(BROWSER_SUITES)|$(MAIL_SUITES)' && \
	timeout -k 30 $(TEST_TIMEOUT) stdbuf -oL -eL $(SWIFT) test --skip-build --filter '$(ALONE_SUITE)' && \
	timeout -k 30 $(TEST_TIMEOUT) stdbuf -oL -eL $(SWIFT) test --skip-build --filter '$(BROWSER_SUITES)' && \
	timeout -k 30 $(TEST_TIMEOUT) stdbuf -oL -eL $(SWIFT) test --skip-build --filter '$(MAIL_SUITES)'

# `make install [PREFIX=/usr/local] [DESTDIR=]`: the binary, its man page (generated from the
# command definitions by swift-argument-parser's generate-manual plugin) and completions for
# bash, zsh and fish (which complete source names for --source, show, reset and status).
PREFIX ?= /usr/local
INSTALL_CONFIGURATION ?= release
MANUAL := .build/plugins/GenerateManual/outputs/fetchrun/fetchrun.1

manual: deps
	$(SWIFT) package plugin generate-manual --configuration $(INSTALL_CONFIGURATION)

# Foundation's ICU library with its data trimmed to what fetchrun reads (scripts/icu-data.py):
# 4.9 MB of the toolchain's 34 MB. The archive is the toolchain's with its one data member
# replaced: the data cut out of it (objcopy), filtered, and assembled again under the same
# symbol. The release builds of `install` and `deb` link it (FETCHRUN_ICU_LIBRARY, read by
# Package.swift); the man page's build too, so that it does not link the release again.
ICU_DIR := .build/icu
ICU_LIBRARY := $(ICU_DIR)/lib_FoundationICU.a
release-icu: $(ICU_LIBRARY)
$(ICU_LIBRARY): scripts/icu-data.py
	@static="$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")")/../lib/swift_static/linux" && \
	test -f "$$static/lib_FoundationICU.a" || { echo "release-icu: no lib_FoundationICU.a in $$static" >&2; exit 1; } && \
	rm -rf $(ICU_DIR) && mkdir -p $(ICU_DIR) && cd $(ICU_DIR) && \
	ar x "$$static/lib_FoundationICU.a" icu_packaged_data.cpp.o && \
	symbol="$$(nm icu_packaged_data.cpp.o | awk '$$2 == "R" { print $$3 }')" && \
	objcopy -O binary --only-section=.rodata icu_packaged_data.cpp.o full.dat && \
	python3 $(CURDIR)/scripts/icu-data.py filter full.dat trimmed.dat && \
	printf '\t.section .rodata\n\t.balign 16\n\t.globl %s\n\t.type %s, @object\n%s:\n\t.incbin "trimmed.dat"\n\t.size %s, . - %s\n\t.section .note.GNU-stack,"",@progbits\n' \
	  "$$symbol" "$$symbol" "$$symbol" "$$symbol" "$$symbol" > data.S && \
	"$$(dirname "$$(readlink -f "$$(command -v $(SWIFT))")")/clang" -c data.S -o icu_packaged_data.cpp.o && \
	cp "$$static/lib_FoundationICU.a" lib_FoundationICU.a.tmp && ar r lib_FoundationICU.a.tmp icu_packaged_data.cpp.o && \
	mv lib_FoundationICU.a.tmp lib_FoundationICU.a

install: export FETCHRUN_ICU_LIBRARY = $(abspath $(ICU_LIBRARY))
install: deps release-icu
	$(SWIFT) build -c $(INSTALL_CONFIGURATION) --product fetchrun
	$(MAKE) manual
	$(MAKE) install-files INSTALL_STRIP=-s FETCHRUN_BIN="$$($(SWIFT) build -c $(INSTALL_CONFIGURATION) --show-bin-path)/fetchrun"

# What each part of the release binary costs, with the toolchain's ICU data and with the
# trimmed one: both linked with a link map, read by Benchmarks/binary-size.py.
size: export FETCHRUN_ICU_LIBRARY =
size: deps release-icu
	@mkdir -p .build/size
	env -u FETCHRUN_ICU_LIBRARY $(SWIFT) build -c release --product fetchrun -Xlinker -Map=$(CURDIR)/.build/size/toolchain-icu.map
	FETCHRUN_ICU_LIBRARY=$(abspath $(ICU_LIBRARY)) $(SWIFT) build -c release --product fetchrun -Xlinker -Map=$(CURDIR)/.build/size/trimmed-icu.map
	python3 Benchmarks/binary-size.py .build/size/toolchain-icu.map .build/size/trimmed-icu.map

# `make deb`: fetchrun_VERSION_amd64.deb and fetchrun-dbgsym_VERSION_amd64.deb in the package
# folder, from the release build (scripts/deb.sh says what goes in); `make deb-check` checks it
# with lintian, installs it, runs what it installed, and purges it (scripts/deb-check.sh).
DEB_DEB_PACKAGES := dpkg-dev binutils
DEB_CHECK_DEB_PACKAGES := lintian groff-base systemd
deb: export FETCHRUN_ICU_LIBRARY = $(abspath $(ICU_LIBRARY))
deb: deps release-icu
	$(call install-missing,$(DEB_DEB_PACKAGES))
	$(SWIFT) build -c release --product fetchrun
	$(MAKE) manual INSTALL_CONFIGURATION=release
	scripts/deb.sh "$$($(SWIFT) build -c release --show-bin-path)/fetchrun" "$(MANUAL)" .

deb-check: deb
	$(call install-missing,$(DEB_CHECK_DEB_PACKAGES))
	scripts/deb-check.sh "fetchrun_$$(tr -d ' \t\r\n' < VERSION)_$$(dpkg --print-architecture).deb"

# The copying half of install, for a built binary and a generated manual (the tests use it);
# `install` strips the binary (INSTALL_STRIP=-s): its debug information stays in the build folder.
INSTALL_STRIP ?=
install-files:
	@test -x "$(FETCHRUN_BIN)" || { echo "install-files: FETCHRUN_BIN must name the built fetchrun" >&2; exit 2; }
	@test -f "$(MANUAL)" || { echo "install-files: no manual at $(MANUAL); make manual writes it" >&2; exit 2; }
	install -D -m 755 $(INSTALL_STRIP) "$(FETCHRUN_BIN)" "$(DESTDIR)$(PREFIX)/bin/fetchrun"
	install -D -m 644 "$(MANUAL)" "$(DESTDIR)$(PREFIX)/share/man/man1/fetchrun.1"
	install -d "$(DESTDIR)$(PREFIX)/share/bash-completion/completions" "$(DESTDIR)$(PREFIX)/share/zsh/site-functions" "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	"$(FETCHRUN_BIN)" --generate-completion-script bash > "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/fetchrun"
	"$(FETCHRUN_BIN)" --generate-completion-script zsh > "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_fetchrun"
	"$(FETCHRUN_BIN)" --generate-completion-script fish > "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/fetchrun.fish"

# Shows that `new-adapter` writes an adapter that builds and whose test passes as generated:
# scaffolds one in a copy of the checkout and runs its test there, with the temporary folders
# of SwiftPM and of the test inside the copy too, so that the trap removes them with it.
scaffold-check: deps
	@copy=$$(mktemp -d) && trap 'rm -rf "$$copy"' EXIT && \
	git ls-files -z | xargs -0 cp --parents -t "$$copy" && \
	cd "$$copy" && mkdir tmp && export TMPDIR="$$copy/tmp" && \
	$(SWIFT) package --allow-writing-to-package-directory new-adapter scaffold-check && \
	$(SWIFT) build --build-tests && \
	$(SWIFT) test --skip-build --filter ScaffoldCheckAdapterTests

# examples/embedding is a package of its own, so it sees only FetchRunKit's public API: built,
# then run against the fixture server (a feed, a synthetic source and its own adapter). SwiftPM
# leaves empty temporary folders at each call, so they go to a folder removed at the end.
embedding-example: deps
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && export TMPDIR="$$scratch" && \
	$(SWIFT) build --product fetchrun-fixture-server && \
	$(SWIFT) build --package-path examples/embedding && \
	examples/embedding/run-against-fixture.sh "$$($(SWIFT) build --show-bin-path)/fetchrun-fixture-server" \
	  "$$($(SWIFT) build --package-path examples/embedding --show-bin-path)/fetchrun-embedding"

# The thread sanitizer over the kit's tests of the runner, watcher, downloads, HTTP client and
# plugins (concurrency lives there), in a build folder of its own.
TSAN_SUITES := FetchRunnerTests|HostLimitTests|CurlSocketWatchTests|DeadlineTimerTests|SQLiteStateStoreTests|SnapshotWriterTests|WatcherTests|DownloaderTests|HTTPDownloadTests|DownloadQueueTests|HTTPClientTests|RSSAdapterTests|PluginProtocolTests|HardeningTests
tsan: deps
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter 'FetchRunKitTests\.($(TSAN_SUITES))'

# The tools fetchrun is compared with: newsboat from Debian, the rest from PyPI into .venv-bench.
bench-peers: deps
	@command -v newsboat >/dev/null || { SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends newsboat time bc; }
	@[ -x .venv-bench/bin/urlwatch ] || { python3 -m venv .venv-bench && \
	  .venv-bench/bin/pip install -q urlwatch feedparser fastfeedparser; }

# fetchrun against newsboat, urlwatch, feedparser and fastfeedparser; writes Benchmarks/RESULTS.md.
bench: bench-peers
	$(SWIFT) build -c release --product fetchrun
	$(SWIFT) build -c release --product fetchrun-fixture-server
	$(SWIFT) build -c release --product fetchrun-parser-benchmark
	$(SWIFT) build -c release --product fetchrun-curl-yardstick
	.venv-bench/bin/python Benchmarks/compare.py --bin "$$($(SWIFT) build -c release --show-bin-path)"

# 1,000 feeds behind one host name (HTTPS with HTTP/2, and plain HTTP) against newsboat-32; prints the table.
bench-one-host: bench-peers
	$(SWIFT) build -c release --product fetchrun
	$(SWIFT) build -c release --product fetchrun-fixture-server
	.venv-bench/bin/python Benchmarks/one_host.py --bin "$$($(SWIFT) build -c release --show-bin-path)"

# 1,000 page sources (50 KB, 50 hosts, css: "#product") cold and repeated, beside 1,000 feeds and
# urlwatch on the same pages; then parse + select of a 1 MB page against libxml2 alone.
bench-pages: bench-peers
	@.venv-bench/bin/python -c 'import cssselect, lxml, html2text' 2>/dev/null || .venv-bench/bin/pip install -q cssselect lxml html2text
	$(SWIFT) build -c release --product fetchrun
	$(SWIFT) build -c release --product fetchrun-fixture-server
	$(SWIFT) build -c release --product fetchrun-parser-benchmark
	.venv-bench/bin/python Benchmarks/pages.py --bin "$$($(SWIFT) build -c release --show-bin-path)"

# 100 pages a script builds, on 10 hosts, through render: browser (tabs: 4), cold and repeated,
# beside Python Playwright fetching the same pages with the same Chromium 4 at a time.
bench-browser: test-venv
	$(SWIFT) build -c release --product fetchrun
	$(SWIFT) build -c release --product fetchrun-fixture-server
	$(TEST_VENV)/bin/python3 Benchmarks/browser.py --bin "$$($(SWIFT) build -c release --show-bin-path)"

# Leases per second one local PostgreSQL serves to 4 workers over 100,000 synthetic sources.
bench-leases: deps
	Benchmarks/leases.sh

# The same in a minute or two: N = 100, one run, a small corpus.
bench-quick: bench-peers
	$(SWIFT) build -c release --product fetchrun
	$(SWIFT) build -c release --product fetchrun-fixture-server
	$(SWIFT) build -c release --product fetchrun-parser-benchmark
	$(SWIFT) build -c release --product fetchrun-curl-yardstick
	.venv-bench/bin/python Benchmarks/compare.py --quick --bin "$$($(SWIFT) build -c release --show-bin-path)"

# Agreement with feedparser on its own well-formed RSS/RDF/Atom test documents (its sdist,
# fetched from PyPI once into .build/feedparser-sdist); make bench includes it.
bench-conformance: bench-peers
	$(SWIFT) build -c release --product fetchrun
	.venv-bench/bin/python Benchmarks/conformance.py --bin "$$($(SWIFT) build -c release --show-bin-path)" --python .venv-bench/bin/python --show 20

# 4 parallel 200 MB enclosure downloads against 4 curl processes; prints the numbers.
bench-downloads: deps
	@command -v curl >/dev/null && command -v bc >/dev/null || { SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends curl bc; }
	Benchmarks/downloads.sh

# Config loading at 1k/10k/100k sources, and 100 healthy feeds beside two hostile ones.
bench-hardening: deps
	Benchmarks/config-load.sh
	Benchmarks/hostile.sh
	Benchmarks/dead-host.sh

# A 10,000-source watch alone and with --listen and a scrape every second: CPU, scrape time.
bench-monitoring: deps
	Benchmarks/monitoring.sh

# fetchrun against the C yardstick: repeat runs (304s, the same 200 body) and a cold run.
bench-yardstick: deps
	Benchmarks/yardstick-ratios.sh

# Half an hour of a watch over a mixed load: memory, descriptors, threads and state over time.
bench-soak: deps
	Benchmarks/soak.sh

# Mutation fuzzing of every reader of outside input (feed, config, json, page, selector, header,
# message: Fuzz/FuzzTarget.swift), FUZZ_SECONDS each (default 60). Exits non-zero when an input
# crashes a reader (left in .build/fuzz/current-<target>), is read wrongly (saved as
# .build/fuzz/wrong-<target>-<n>) or is slower than a second (.build/fuzz/slow-<target>-<n>).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= feed config json page selector header message
fuzz: deps
	$(SWIFT) build -c release --product fetchrun-fuzz
	fuzz="$$($(SWIFT) build -c release --show-bin-path)/fetchrun-fuzz" && \
	for target in $(FUZZ_TARGETS); do \
	  seeds="--seeds Fuzz/seeds/$$target"; \
	  if [ "$$target" = feed ]; then seeds="$$seeds --seeds Benchmarks/corpus --seeds feeds"; fi; \
	  "$$fuzz" $$target $$seeds --seconds $(FUZZ_SECONDS) || exit 1; \
	done

clean:
	rm -rf .build

# The dashboard's pages, light and dark, photographed in Debian's headless chromium into docs/
# (the README shows them): a watch over a few local feeds and a page, with a recorded change.
# Then an HTML mail of two sources as the end-to-end mail test renders it, in a font with
# Chinese, Japanese and Korean glyphs (only the pictures need one).
screenshots: test-venv
	$(call install-missing,fonts-wqy-microhei)
	$(SWIFT) build --product fetchrun
	$(TEST_VENV)/bin/python3 scripts/dashboard-screenshots.py .build/debug/fetchrun docs/images
	$(SWIFT) build --build-tests
	FETCHRUN_SCREENSHOTS="$$(pwd)/docs/images" $(SWIFT) test --skip-build --filter HTMLMailTests.aMailOfTwoSources
