import Testing
@testable import FetchRunKit

@Suite struct ConfigLoaderTests {
    func load(_ text: String, environment: [String: String] = [:]) throws(ConfigError) -> FetchConfig {
        try ConfigLoader(environment: environment).load(text: text, file: "sources.yaml", directory: "/etc/fetchrun")
    }

    /// Every problem the text holds, as the user sees them.
    func problems(_ text: String, environment: [String: String] = [:]) -> [String] {
        do {
            _ = try load(text, environment: environment)
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test func appliesDefaultsAndResolvesStateDirectory() throws {
        let config = try load("""
            state_dir: state
            defaults:
              deadline: 10s
              interval: 1m
              keep: 5
            sources:
              - name: traffic
                type: traffic
              - name: news
                type: random-news
                deadline: 250ms
                interval: never
                keep: 3
                enabled: false
            """)
        #expect(config.stateDirectory == "/etc/fetchrun/state")
        #expect(config.sources.map(\.name) == ["traffic", "news"])
        #expect(config.sources[0].settings.deadline == .seconds(10))
        #expect(config.sources[0].settings.interval == .every(.seconds(60)))
        #expect(config.sources[0].settings.keep == 5)
        #expect(config.sources[1].settings.deadline == .milliseconds(250))
        #expect(config.sources[1].settings.interval == .never)
        #expect(config.sources[1].settings.keep == 3)
        #expect(config.sources[1].enabled == false)
        #expect(config.sources(named: []).map(\.name) == ["traffic"])
        #expect(config.sources(named: ["news"]).map(\.name) == ["news"])
    }

    @Test func aRunOfEveryEnabledSourceIsTheWholeListWhenNoneIsDisabled() throws {
        let config = try load("sources:\n  - name: a\n    type: traffic\n  - name: b\n    type: traffic\n    enabled: true\n")
        #expect(config.sources(named: []).map(\.name) == ["a", "b"])
        #expect(config.sources(named: ["b"]).map(\.name) == ["b"])
        #expect(config.sources(named: ["c"]).isEmpty)
    }

    @Test func builtInDefaults() throws {
        let config = try load("sources:\n  - name: t\n    type: traffic\n")
        #expect(config.stateDirectory == "/etc/fetchrun/.fetchrun")
        #expect(config.sources[0].settings.deadline == .seconds(30))
        #expect(config.sources[0].settings.interval == .every(.seconds(900)))
        #expect(config.sources[0].settings.keep == 200)
    }

    @Test func unknownKeySuggestsTheNearestOne() {
        #expect(problems("sources:\n  - name: traffic\n    type: traffic\n    intervall: 5m\n")
            == ["sources.yaml:4:5: source 'traffic': unknown key 'intervall' (did you mean 'interval'?)"])
        #expect(problems("sourcez: []\n").first == "sources.yaml:1:1: unknown key 'sourcez' (did you mean 'sources'?)")
    }

    @Test func adapterOptionsAreCheckedByTheAdapter() {
        let found = problems("""
            sources:
              - name: traffic
                type: traffic
                min: 3
                max: 1
                latency: fast
              - name: news
                type: random-news
                probability: 1.5
                seed: -1
            """)
        #expect(found == [
            "sources.yaml:4:10: source 'traffic': 'min' (3) is greater than 'max' (1)",
            "sources.yaml:6:14: source 'traffic': 'latency': invalid latency 'fast': expected a number at 'fast'; write it like 30s, 5m or 1h30m",
            "sources.yaml:9:18: source 'news': 'probability': invalid number '1.5': must be between 0.0 and 1.0",
            "sources.yaml:10:11: source 'news': 'seed': invalid whole number '-1': must be between 0 and \(Int.max)",
        ])
    }

    @Test func wrongTypesAndBadDurations() {
        let found = problems("""
            defaults:
              deadline: 30
            sources:
              - name: a
                type: traffic
                keep: lots
                enabled: yes
                deadline: 0s
                min: [1]
            """)
        #expect(found == [
            "sources.yaml:2:13: 'deadline': invalid duration '30': missing unit after '30'; units are ms, s, m, h and d (as in 250ms, 30s, 5m, 1h30m, 7d)",
            "sources.yaml:6:11: source 'a': 'keep': invalid whole number 'lots': not a whole number",
            "sources.yaml:7:14: source 'a': 'enabled': invalid boolean 'yes': write true or false",
            "sources.yaml:8:15: source 'a': 'deadline': invalid duration '0s': must be longer than zero",
            "sources.yaml:9:10: source 'a': 'min' must be a whole number, not a list",
        ])
    }

    @Test func duplicateNamesUnknownTypesAndBadNames() {
        let found = problems("""
            sources:
              - name: a
                type: traffic
              - name: a
                type: random-news
              - name: b
                type: rsss
              - name: ../etc/passwd
                type: traffic
              - name: x/y
                type: traffic
              - type: traffic
            """)
        #expect(found.count == 5)
        #expect(found[0] == "sources.yaml:4:11: duplicate source name 'a' (first used at 2:11)")
        #expect(found[1] == "sources.yaml:7:11: source 'b': unknown adapter type 'rsss' (did you mean 'rss'?); known types: exec, json, page, random-news, rss, traffic, or a plugin fetchrun-adapter-rsss in plugins/ or on PATH")
        #expect(found[2].hasPrefix("sources.yaml:8:11: invalid source name '../etc/passwd'"))
        #expect(found[3].hasPrefix("sources.yaml:10:11: invalid source name 'x/y'"))
        guard found.count == 5 else { return }
        #expect(found[4] == "sources.yaml:12:5: source #6 has no 'name'")
    }

    @Test func nameRules() {
        for good in ["a", "reuters-technology", "x.y_z-1", String(repeating: "a", count: 64)] {
            #expect(ConfigLoader.isValidName(good), "\(good)")
        }
        for bad in ["", "A", "-a", ".a", "a/b", "..", "a..b", "a b", "ä", String(repeating: "a", count: 65)] {
            #expect(!ConfigLoader.isValidName(bad), "\(bad)")
        }
    }

    /// Workers sharing PostgreSQL state store these: a new form would read as a change of
    /// every source.
    @Test func fingerprintsKeepTheirForm() throws {
        let config = try load("""
        sources:
          - name: a
            type: rss
            url: "http://example.org/feed"
            tags: [x, y]
          - name: b
            type: traffic
            deadline: 5s
            interval: 1h
          - name: c
            type: rss
            url: http://example.org/c
        """)
        #expect(config.sources.map(\.fingerprint) == [
            "30.0 seconds|15m|-|3600.0 seconds|200|{name:a,tags:[x,y],type:rss,url:'http://example.org/feed}",
            "5.0 seconds|1h|-|3600.0 seconds|200|{deadline:5s,interval:1h,name:b,type:traffic}",
            "30.0 seconds|15m|-|3600.0 seconds|200|{name:c,type:rss,url:http://example.org/c}",
        ])
    }

    @Test func environmentExpansionAndUnsetVariables() throws {
        let config = try load("sources:\n  - name: t\n    type: traffic\n    deadline: ${DEADLINE:-2s}\n    max: ${MAX}\n", environment: ["MAX": "7"])
        #expect(config.sources[0].settings.deadline == .seconds(2))
        #expect((config.sources[0].adapter as? TrafficAdapter)?.updatesPerFetch == 0...7)

        #expect(problems("sources:\n  - name: t\n    type: traffic\n    max: ${NOT_SET}\n")
            == ["sources.yaml:4:10: source 't': 'max': environment variable 'NOT_SET' is not set (write ${NOT_SET:-default} to give it a fallback)"])
    }

    @Test func expandedValuesAreNotEchoedInMessages() {
        let found = problems("sources:\n  - name: t\n    type: traffic\n    deadline: ${SECRET}\n", environment: ["SECRET": "hunter2"])
        #expect(found.count == 1)
        #expect(!found[0].contains("hunter2"))
        #expect(found[0].contains("${SECRET}"))
    }

    @Test func yamlProblemsAndTypeProblemsAreReportedTogether() {
        let found = problems("sources:\n  - name: a\n    type: traffic\n    mni: 1\n    deadline: *x\n")
        #expect(found.count == 2)
        guard found.count == 2 else { return }
        #expect(found[0].contains("unknown key 'mni'"))
        #expect(found[1].contains("aliases"))
    }

    @Test func structureProblems() {
        #expect(problems("") == ["sources.yaml: the config file is empty; it needs at least a 'sources:' list"])
        #expect(problems("- a\n- b\n").first?.contains("must be a mapping") == true)
        #expect(problems("state_dir: x\n") == ["sources.yaml:1:1: missing 'sources:' — the list of sources to fetch"])
        #expect(problems("sources: traffic\n").first?.contains("'sources' must be a list") == true)
        #expect(problems("sources:\n  - traffic\n").first?.contains("source #1 must be a mapping") == true)
    }

    @Test func emptySourceListIsValid() throws {
        #expect(try load("sources: []\n").sources.isEmpty)
    }

    @Test func missingFile() {
        #expect(throws: ConfigError.self) { try ConfigLoader().load(path: "/nonexistent/sources.yaml") }
        do {
            _ = try ConfigLoader().load(path: "/nonexistent/sources.yaml")
        } catch {
            // Says what happened and what to do next.
            #expect(error.description.hasPrefix("/nonexistent/sources.yaml: cannot read the config file: no such file; `fetchrun init` writes a starter config"))
        }
    }
}

@Suite struct OneBadSourceTests {
    let yaml = """
        sources:
          - name: good
            type: traffic
          - name: needs-token
            type: rss
            url: "https://x.example/?t=${UNSET_TOKEN}"
          - name: typo
            type: traffic
            mx: 3
        """

    @Test func aSourceWithProblemsOfItsOwnIsLeftOutWhenOthersAreValid() throws {
        var loader = ConfigLoader(environment: [:])
        loader.keepsValidSources = true
        let config = try loader.load(text: yaml, file: "s.yaml", directory: "/")
        #expect(config.sources.map(\.name) == ["good"])
        #expect(config.rejectedSources.map(\.name) == ["needs-token", "typo"])
        let reasons = config.rejectedSources.map { $0.failure.message }
        #expect(reasons[0].hasPrefix("s.yaml:6:"), "\(reasons)")
        #expect(reasons[0].contains("UNSET_TOKEN"))
        #expect(reasons[1].hasPrefix("s.yaml:9:5: source 'typo': unknown key 'mx'"), "\(reasons)")
        #expect(config.rejectedSources.allSatisfy { $0.failure.kind == .config })
    }

    @Test func everyProblemIsStillAnErrorByDefaultAndOutsideSources() {
        #expect(throws: ConfigError.self) { try ConfigLoader(environment: [:]).load(text: yaml, file: "s.yaml", directory: "/") }
        var loader = ConfigLoader(environment: [:])
        loader.keepsValidSources = true
        // A problem outside any source, or no valid source at all, fails the load.
        #expect(throws: ConfigError.self) { try loader.load(text: "max_in_flight: lots\n" + yaml, file: "s.yaml", directory: "/") }
        #expect(throws: ConfigError.self) { try loader.load(text: "sources:\n  - name: typo\n    type: traffic\n    mx: 3\n", file: "s.yaml", directory: "/") }
    }
}
