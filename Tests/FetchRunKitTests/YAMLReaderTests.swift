import Testing
@testable import FetchRunKit

@Suite struct YAMLReaderTests {
    let reader = YAMLReader(file: "test.yaml")

    @Test func keepsLineAndColumnOfKeysAndValues() throws {
        let (root, diagnostics) = reader.read("a: 1\nlist:\n  - x: 'quoted'\n")
        #expect(diagnostics.isEmpty)
        guard case .mapping(let entries, _) = root else { Issue.record("not a mapping"); return }
        #expect(entries.map(\.key.value) == ["a", "list"])
        #expect(entries[0].key.mark == SourceMark(line: 1, column: 1))
        #expect(entries[0].value.mark == SourceMark(line: 1, column: 4))
        guard case .sequence(let items, _) = entries[1].value, case .mapping(let inner, _) = items.first else {
            Issue.record("list not read"); return
        }
        #expect(inner[0].key.mark == SourceMark(line: 3, column: 5))
        guard case .scalar(let scalar) = inner[0].value else { Issue.record("not a scalar"); return }
        #expect(scalar.value == "quoted")
        #expect(!scalar.isPlain)
    }

    @Test func plainScalarsStayText() {
        let (root, _) = reader.read("a: yes\nb: ~\n")
        guard case .mapping(let entries, _) = root, case .scalar(let yes) = entries[0].value, case .scalar(let null) = entries[1].value else {
            Issue.record("not read"); return
        }
        #expect(yes.value == "yes" && yes.isPlain && !yes.isNull)
        #expect(null.isNull)
    }

    @Test func syntaxErrorPointsAtTheProblem() {
        let (root, diagnostics) = reader.read("sources:\n  - name: a\n    type: [x\n")
        #expect(root == nil)
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.message.hasPrefix("YAML syntax error") == true)
        #expect(diagnostics.first?.mark?.line == 4)
    }

    @Test func aliasesAreRejected() {
        let (_, diagnostics) = reader.read("a: &anchor 1\nb: *anchor\n")
        #expect(diagnostics.map(\.description) == ["test.yaml:2:4: YAML aliases (*name) are not allowed in a config file"])
    }

    @Test func duplicateKeysAreReportedAndTheFirstKept() {
        let (root, diagnostics) = reader.read("a: 1\nb: 2\na: 3\n")
        #expect(diagnostics.map(\.description) == ["test.yaml:3:1: duplicate key 'a' (first written at 1:1)"])
        guard case .mapping(let entries, _) = root, case .scalar(let first) = entries[0].value else { Issue.record("not read"); return }
        #expect(entries.count == 2)
        #expect(first.value == "1")
    }

    /// Small mappings are checked by looking through their keys, large ones through an index
    /// built when they grow: both find a repeat, whether its first is before or after the switch.
    @Test func duplicateKeysAreFoundInMappingsOfEverySize() {
        let keys = (1...40).map { "k\($0)" }
        let text = keys.map { "\($0): 1\n" }.joined() + "k3: 2\nk30: 2\nk40: 2\n"
        let (root, diagnostics) = reader.read(text)
        #expect(diagnostics.map(\.description) == [
            "test.yaml:41:1: duplicate key 'k3' (first written at 3:1)",
            "test.yaml:42:1: duplicate key 'k30' (first written at 30:1)",
            "test.yaml:43:1: duplicate key 'k40' (first written at 40:1)",
        ])
        guard case .mapping(let entries, _) = root else { Issue.record("not read"); return }
        #expect(entries.map(\.key.value) == keys)

        // A key whose value was dropped (an alias) still counts as written.
        let aliased = reader.read("a: &x 1\nb: *x\nb: 2\n").diagnostics.map(\.description)
        #expect(aliased.contains("test.yaml:3:1: duplicate key 'b' (first written at 2:1)"))
    }

    @Test func nestingDeeperThanTheLimitIsRefused() {
        let deep = String(repeating: "[", count: YAMLReader.maximumDepth + 1) + String(repeating: "]", count: YAMLReader.maximumDepth + 1)
        let (root, diagnostics) = reader.read(deep)
        #expect(root == nil)
        #expect(diagnostics.first?.message.contains("nesting deeper than") == true)

        let fine = String(repeating: "[", count: YAMLReader.maximumDepth) + String(repeating: "]", count: YAMLReader.maximumDepth)
        #expect(reader.read(fine).diagnostics.isEmpty)
    }

    @Test func oneDocumentPerFile() {
        let (_, diagnostics) = reader.read("a: 1\n---\nb: 2\n")
        #expect(diagnostics.first?.message.contains("one YAML document") == true)
    }

    @Test func emptyTextHasNoRoot() {
        let (root, diagnostics) = reader.read("")
        #expect(root == nil && diagnostics.isEmpty)
    }
}
