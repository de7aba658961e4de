// swift-tools-version:6.2
import PackageDescription

// The project's own code builds without a warning: any warning fails the build.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

// What runs in `fetchrun` itself, in release, reaches the metadata of its generic types
// (`[SourceSettings: String]`, the curl loop's table of transfers, …) through accessors that
// name their conformances directly, instead of by a mangled name the runtime demangles and
// resolves at first use: each of those searched the program's ~9,600 protocol conformances,
// ~2 ms of a 1,000-source start before the first fetch (Benchmarks/RESULTS.md). The code is a
// little larger; nothing else changes.
let strictWithDirectMetadata: [SwiftSetting] = strict + [
    .unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"], .when(configuration: .release)),
]

// A release `fetchrun` carries the Swift runtime and Foundation inside it: it runs on a machine
// without the Swift toolchain, and it starts ~5 ms sooner (the dynamic loader no longer binds
// fourteen Swift libraries' symbols at every start; Benchmarks/RESULTS.md). Only the link changes, so
// the compiled objects are shared with every other product. Foundation's static library
// leaves its C dependencies to the link: CoreFoundation, ICU and the C shims, and libstdc++.
// Linked by the toolchain's lld: gold warns at every link about a `mktemp` inside Foundation.
// The static runtime's link arguments export every symbol of the program for dynamic linking
// (44,000 of them: 3.7 MB of symbol tables the loader maps and searches at every start), which
// a program that loads no Swift libraries at run time has no use for; the last flag wins.
// The program is position-independent, so the loader rewrites ~129,000 of its pointers at every
// start. Listed as RELR (`pack-relative-relocs`: a bitmap of 25 KB instead of 3.1 MB of RELA
// entries) they are read and applied ~1.5 ms sooner; it needs glibc 2.36 (Debian 12) to start.
// ICU's data is 34 MB of the 81 MB stripped binary. `make release-icu` writes a copy of
// Foundation's ICU library whose data holds only what fetchrun reads (scripts/icu-data.py:
// 4.9 MB), and `make install` and `make deb` link it by naming it in FETCHRUN_ICU_LIBRARY;
// a plain `swift build -c release` links the toolchain's, whole.
let icuLibrary = Context.environment["FETCHRUN_ICU_LIBRARY"].map { [$0] } ?? ["-l_FoundationICU"]
let staticSwiftRuntimeInRelease: LinkerSetting = .unsafeFlags(
    ["-static-stdlib", "-use-ld=lld", "-lCoreFoundation"] + icuLibrary + ["-l_FoundationCShims", "-l_FoundationCollections", "-lstdc++",
     "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
    .when(configuration: .release)
)

let package = Package(
    name: "fetchrun",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "FetchRunKit", targets: ["FetchRunKit"]),
        .executable(name: "fetchrun", targets: ["fetchrun"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // TLS settings for the one direct connection that checks a PostgreSQL URL (postgres-nio's own).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // HMAC-SHA256 for signed webhooks (postgres-nio builds it anyway, for SCRAM).
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // Metrics: recorded through swift-metrics' API by the engine, exposed in Prometheus's
        // text format by swift-prometheus, served by Hummingbird (`--listen`).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The dashboard's HTML: templates whose every {{value}} is escaped unless written otherwise.
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        // `render: browser`: the WebSocket client that speaks the Chrome DevTools Protocol.
        .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
    ],
    targets: [
        // System libraries: each folder holds a module map and a shim header, nothing more.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // The state database: the system's libsqlite3.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Linux calls glibc declares only for _GNU_SOURCE (sync_file_range); no library to link.
        .systemLibrary(name: "CLinux"),
        // The curl loop's epoll set and eventfd, behind plain types (a C file, not a module map:
        // <sys/epoll.h> seen by Swift clashes with its Glibc module).
        .target(name: "CEpoll"),
        // Only the fixture server compresses: gzip and brotli responses.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CBrotli", pkgConfig: "libbrotlienc", providers: [.apt(["libbrotli-dev"])]),

        // The shared vocabulary, the lowest layer above the C shims: failures, JSON values and
        // their reader and writer, text safe for a terminal, durations and sizes, and the
        // concurrency primitives (off-pool work, the deadline timer, locks). It imports nothing
        // of fetchrun's, so nothing in it can lean on a feature.
        .target(name: "FetchRunCore", swiftSettings: strictWithDirectMetadata),

        // The network, through libcurl: requests, downloads into files, mail over SMTP, the
        // per-host queue and the one thread that drives every transfer. It knows the core and
        // nothing above it: no source, adapter or output.
        .target(
            name: "FetchRunTransport",
            dependencies: [
                "FetchRunCore",
                "CCurl",
                "CLinux",
                "CEpoll",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictWithDirectMetadata,
            plugins: ["VersionInfo"]
        ),

        // The engine: config, adapters, runner, snapshots, reporting. Embeddable on its own.
        .target(
            name: "FetchRunKit",
            dependencies: [
                "FetchRunCore",
                "FetchRunTransport",
                "CYAML",
                "CCurl",
                "CSQLite",
                "CLibXML2",
                "CLinux",
                "CEpoll",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                // A mail's HTML part: a template whose every {{value}} is escaped.
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: strictWithDirectMetadata
        ),

        // Operability from outside: Prometheus metrics, the HTTP endpoint (`--listen`) with its
        // feeds of changes and dashboard, systemd notify, the metrics file of one-shot runs. A target of its own, so that a program
        // embedding FetchRunKit builds neither SwiftNIO nor Hummingbird.
        .target(
            name: "FetchRunMonitor",
            dependencies: [
                "FetchRunKit",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictWithDirectMetadata
        ),

        // Many workers sharing one state in PostgreSQL (`state: postgres://…`). A target of its
        // own, so that a program embedding FetchRunKit does not build SwiftNIO.
        .target(
            name: "FetchRunCluster",
            dependencies: [
                "FetchRunKit",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictWithDirectMetadata
        ),

        // `render: browser`: pages fetched through Chromium over the DevTools Protocol, behind the
        // kit's `PageRenderer`. A target of its own, so that a program embedding FetchRunKit
        // builds no WebSocket client.
        .target(
            name: "FetchRunBrowser",
            dependencies: [
                "FetchRunKit",
                "CLinux",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictWithDirectMetadata
        ),

        // The command line: parses arguments, calls the kit, prints.
        .executableTarget(
            name: "fetchrun",
            dependencies: [
                "FetchRunKit",
                "FetchRunBrowser",
                "FetchRunCluster",
                "FetchRunMonitor",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictWithDirectMetadata,
            linkerSettings: [staticSwiftRuntimeInRelease],
            plugins: ["VersionInfo"]
        ),

        // A local HTTP server for tests and benchmarks: generated feeds and every kind of fault.
        .target(name: "FixtureServer", dependencies: ["FetchRunKit", "CZlib", "CBrotli"], swiftSettings: strict),
        .executableTarget(name: "fetchrun-fixture-server", dependencies: ["FixtureServer"], swiftSettings: strict),
        .executableTarget(
            name: "fetchrun-parser-benchmark",
            dependencies: ["FetchRunKit", "FixtureServer", "CLibXML2"],
            path: "Benchmarks/ParserBenchmark",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "fetchrun-scrape-benchmark",
            dependencies: ["FetchRunKit", "FetchRunMonitor", .product(name: "NIOCore", package: "swift-nio")],
            path: "Benchmarks/ScrapeBenchmark",
            swiftSettings: strict
        ),
        // The yardstick: the same requests from libcurl alone, in C; with --store, parsed by
        // libxml2's reader and stored in SQLite too (the cold run's floor).
        .executableTarget(name: "fetchrun-curl-yardstick", dependencies: ["CCurl", "CLibXML2", "CSQLite"], path: "Benchmarks/CurlYardstick"),

        // `make fuzz`: mutates seed feeds and configs and runs them through the readers.
        .executableTarget(name: "fetchrun-fuzz", dependencies: ["FetchRunKit"], path: "Fuzz", exclude: ["seeds"], swiftSettings: strict),

        // `swift package --allow-writing-to-package-directory new-adapter <type>` scaffolds a
        // compiled-in adapter, its test and its registry line.
        // Before every build: the release (VERSION) for FetchRunTransport, the commit for fetchrun.
        .plugin(name: "VersionInfo", capability: .buildTool(), path: "Plugins/VersionInfo"),
        .plugin(
            name: "NewAdapter",
            capability: .command(
                intent: .custom(verb: "new-adapter", description: "Scaffold a compiled-in adapter, its test and its registry line"),
                permissions: [.writeToPackageDirectory(reason: "writes the new adapter's source and test files and registers it")]
            ),
            path: "Plugins/NewAdapter"
        ),

        // What the test targets share: child processes, a PostgreSQL server of their own, a clock
        // that moves when told, and the one real-time wait.
        .target(name: "TestSupport", dependencies: ["CLinux", "FetchRunCore"], path: "Tests/Support", swiftSettings: strict),
        .testTarget(
            name: "FetchRunKitTests",
            dependencies: [
                "FetchRunKit", "FetchRunMonitor", "FetchRunBrowser", "FixtureServer", "TestSupport",
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // One suite of store-level and pipeline-level tests, run against both state stores.
        .testTarget(name: "StateStoreContractTests", dependencies: ["FetchRunKit", "FetchRunCluster", "FixtureServer", "TestSupport"], swiftSettings: strict),
        // Runs the built `fetchrun` binary; depending on it makes `swift test` build it first.
        .testTarget(name: "FetchRunEndToEndTests", dependencies: ["fetchrun", "FixtureServer", "TestSupport", "CLinux"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
