import Foundation
@testable import PracticeKit
import TestSupport
import XCTest

/// The written documentation against the code it describes, so that neither drifts from the
/// other: every key the configuration parser accepts is in docs/configuration.md's table and
/// in practiced.conf(5); every source file the docs name by path exists; no source file is
/// longer than the house allows (docs/development.md).
final class DocumentationTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    private func read(_ relative: String) throws -> String {
        try String(contentsOfFile: "\(Self.repository)/\(relative)", encoding: .utf8)
    }

    /// The keys a row of configuration.md's table names in its first cell (one or several,
    /// each in backticks).
    private func documentedKeys() throws -> Set<String> {
        var keys: Set<String> = []
        for line in try read("docs/configuration.md").split(separator: "\n") where line.hasPrefix("| `") {
            let firstCell = line.dropFirst(2).prefix { $0 != "|" }
            for match in firstCell.matches(of: /`([a-z_]+\.[a-z_.]+)`/) { keys.insert(String(match.1)) }
        }
        return keys
    }

    func testEveryConfigurationKeyIsInConfigurationMarkdown() throws {
        let accepted = Set(ConfigurationKey.all.map(\.name))
        XCTAssertGreaterThan(accepted.count, 30)
        let documented = try documentedKeys()
        XCTAssertEqual(accepted.subtracting(documented).sorted(), [], "keys practiced accepts that docs/configuration.md's table lacks")
        XCTAssertEqual(documented.subtracting(accepted).sorted(), [], "keys docs/configuration.md lists that practiced does not accept")
    }

    func testEveryConfigurationKeyIsInTheManualPage() throws {
        let page = try read("docs/man/practiced.conf.5")
        // Each key is an entry of its own: `.B key` after `.TP`.
        let entries = Set(page.split(separator: "\n").compactMap { line -> String? in
            line.hasPrefix(".B ") ? String(line.dropFirst(3)).replacingOccurrences(of: "\\", with: "") : nil
        })
        let missing = ConfigurationKey.all.map(\.name).filter { !entries.contains($0) }
        XCTAssertEqual(missing, [], "keys practiced accepts that practiced.conf(5) has no entry for")
    }

    /// docs/operations.md's metrics table is the catalogue (``Metric/all``), row for row: the
    /// series' name, type, label and help.
    func testTheMetricsTableIsTheCatalogue() throws {
        let rows = try read("docs/operations.md").split(separator: "\n").filter { $0.hasPrefix("| `practiced_") }.map(String.init)
        let expected = Metric.all.map { "| `\($0.name)` | \($0.kind.rawValue) | \($0.label.map { "`\($0)`" } ?? "–") | \($0.help) |" }
        XCTAssertEqual(rows, expected)
        XCTAssertEqual(Set(Metric.all.map(\.name)).count, Metric.all.count, "a series declared twice")
    }

    /// Every `path/of/a/File.swift` (or .js, .css, .html, .py, .c, .h, .sh) in backticks in
    /// docs/ and the README is a file in the repository, named by its path or the end of it.
    func testEverySourcePathTheDocsNameExists() throws {
        let files = try trackedFiles()
        XCTAssertGreaterThan(files.count, 200)
        // Files the programs make at run time, named in the docs as what they are.
        let madeAtRunTime: Set<String> = ["launch.html"]
        var documents = ["README.md"]
        let docs = "\(Self.repository)/docs"
        for case let name as String in FileManager.default.enumerator(atPath: docs)! where name.hasSuffix(".md") { documents.append("docs/\(name)") }
        var missing: [String] = []
        var checked = 0
        for document in documents {
            for match in try read(document).matches(of: /`([A-Za-z0-9_.+\/-]+\.(swift|js|css|html|py|c|h|sh))`/) {
                let path = String(match.1)
                // Installed paths (/usr/..., /etc/...) are the package's business (PackageTests).
                guard !path.hasPrefix("/"), !madeAtRunTime.contains(path) else { continue }
                checked += 1
                if !files.contains(where: { $0 == path || $0.hasSuffix("/" + path) }) { missing.append("\(document): \(path)") }
            }
        }
        XCTAssertGreaterThan(checked, 40)
        XCTAssertEqual(missing, [], "source paths the docs name that are not in the repository")
    }

    /// The house's limit on a source file (docs/development.md): a reader sees one concern.
    func testNoSourceFileIsLongerThan450Lines() throws {
        var long: [String] = []
        for path in try trackedFiles() where path.hasPrefix("Sources/") && path.hasSuffix(".swift") {
            let lines = try read(path).split(separator: "\n", omittingEmptySubsequences: false).count - 1
            if lines > 450 { long.append("\(path): \(lines) lines") }
        }
        XCTAssertEqual(long, [], "source files over the house's 450 lines")
    }

    /// The repository's files as git knows them (a build folder's copies are not the docs' business).
    private func trackedFiles() throws -> [String] {
        try runTool("git", ["-C", Self.repository, "ls-files", "--cached", "--others", "--exclude-standard"])
            .split(separator: "\n").map(String.init)
    }
}
