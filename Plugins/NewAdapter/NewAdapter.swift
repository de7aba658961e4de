import Foundation
import PackagePlugin

/// `swift package --allow-writing-to-package-directory new-adapter <type>`
///
/// Scaffolds a compiled-in adapter: `Sources/FetchRunKit/Adapters/<Name>Adapter.swift`, a test
/// in `Tests/FetchRunKitTests/<Name>AdapterTests.swift`, and its line in the registry. What it
/// writes builds, and its test passes, as written.
@main
struct NewAdapter: CommandPlugin {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func performCommand(context: PluginContext, arguments: [String]) async throws {
        guard arguments.count == 1, let type = arguments.first else {
            throw Failure(description: "usage: swift package --allow-writing-to-package-directory new-adapter <type>   (for example: weather, air-quality)")
        }
        guard isValidType(type) else {
            throw Failure(description: "'\(type)' cannot be an adapter type: use lower-case letters, digits and '-', starting with a letter")
        }
        let name = typeName(type)
        let root = URL(fileURLWithPath: context.package.directoryURL.path)
        let adapterFile = root.appendingPathComponent("Sources/FetchRunKit/Adapters/\(name)Adapter.swift")
        let testFile = root.appendingPathComponent("Tests/FetchRunKitTests/\(name)AdapterTests.swift")
        let registryFile = root.appendingPathComponent("Sources/FetchRunKit/Adapters/AdapterRegistry.swift")
        for file in [adapterFile, testFile] where FileManager.default.fileExists(atPath: file.path) {
            throw Failure(description: "\(file.path) exists already; nothing was written")
        }

        var registry = try String(contentsOf: registryFile, encoding: .utf8)
        let marker = "        // new-adapter: new built-in adapters go above this line\n"
        guard let range = registry.range(of: marker) else {
            throw Failure(description: "cannot find the new-adapter marker in \(registryFile.path); nothing was written")
        }
        registry.insert(contentsOf: "        AdapterDescriptor(\(name)Adapter.self),\n", at: range.lowerBound)

        try adapterSource(type: type, name: name).write(to: adapterFile, atomically: true, encoding: .utf8)
        try testSource(type: type, name: name).write(to: testFile, atomically: true, encoding: .utf8)
        try registry.write(to: registryFile, atomically: true, encoding: .utf8)
        print("""
            wrote \(adapterFile.path)
            wrote \(testFile.path)
            registered \(name)Adapter in \(registryFile.path)
            next: fill in fetch(_:), then `make test`; `fetchrun adapters` lists type '\(type)'
            """)
    }

    func isValidType(_ type: String) -> Bool {
        guard let first = type.first, first.isASCII, first.isLowercase else { return false }
        return type.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" } && !type.hasSuffix("-")
    }

    /// `air-quality` → `AirQuality`.
    func typeName(_ type: String) -> String {
        type.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    func adapterSource(type: String, name: String) -> String {
        """
        import Foundation

        /// `type: \(type)` — describe here what this adapter fetches.
        ///
        /// As generated it makes one item per fetch, titled with the `greeting` option and
        /// numbered from a counter kept in the snapshot's adapter state — replace `fetch(_:)`
        /// with the real work. See docs/adapters.md for the contract: options checked at load
        /// time, stable ids, state, and stopping promptly when the fetch is cancelled.
        public struct \(name)Adapter: ConfigurableAdapter {
            public static let type = "\(type)"
            public static let summary = "\(type): describe what it fetches in one line"
            public static let options = [
                AdapterOption("greeting", kind: "string", default: "Hello", "an example option: the title of the items it makes"),
            ]

            public var greeting: String

            /// For a source built in code (an embedding program's), no config involved.
            public init(greeting: String = "Hello") {
                self.greeting = greeting
            }

            public init(options: AdapterOptions) throws {
                greeting = options.string("greeting") ?? "Hello"
                if greeting.isEmpty {
                    options.report("'greeting' must not be empty", key: "greeting")
                }
            }

            public func fetch(_ context: FetchContext) async throws -> FetchOutput {
                // Long work checks for cancellation (the deadline) as it goes.
                try Task.checkCancellation()
                let number = (context.previous?.adapterState?["fetches"]?.intValue ?? 0) + 1
                let item = Item(id: "\\(context.sourceName)-\\(number)", title: "\\(greeting) #\\(number)", published: Date())
                return FetchOutput(items: [item], adapterState: .object(["fetches": .number(Double(number))]))
            }
        }

        """
    }

    func testSource(type: String, name: String) -> String {
        """
        import Foundation
        import Testing
        @testable import FetchRunKit

        @Suite struct \(name)AdapterTests {
            func load(_ options: String) throws -> FetchConfig {
                try ConfigLoader(environment: [:]).load(text: "sources:\\n  - name: example\\n    type: \(type)\\n" + options, file: "sources.yaml", directory: "/")
            }

            @Test func isRegisteredAndReadsItsOptions() throws {
                let adapter = try #require(try load("    greeting: Hi\\n").sources.first?.adapter as? \(name)Adapter)
                #expect(adapter.greeting == "Hi")
            }

            @Test func reportsABadOptionWithItsPlace() {
                #expect(throws: ConfigError.self) { try load("    greeting: \\"\\"\\n") }
                #expect(throws: ConfigError.self) { try load("    greting: Hi\\n") }
            }

            @Test func eachFetchIsNewDataAndTheStateCarriesOn() async throws {
                let source = try #require(try load("").sources.first)
                // The same pipeline run, watch and worker use, over a fresh state.db.
                let pipeline = try await pipeline(in: temporaryStateDirectory())
                let first = await pipeline.fetch(source).report
                let second = await pipeline.fetch(source).report
                #expect(first.outcome.newItems.map(\\.title) == ["Hello #1"])
                #expect(second.outcome.newItems.map(\\.title) == ["Hello #2"])
                #expect(second.totalItems == 2)
            }
        }

        """
    }
}
