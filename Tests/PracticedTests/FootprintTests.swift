import Foundation
import PracticeKit
import TestSupport
import XCTest

/// What the shipped daemon maps into memory: its resident size is mostly shared libraries'
/// pages (docs/performance.md), so a library it stops needing must stay out.
final class FootprintTests: XCTestCase {
    func testTheDaemonLoadsNeitherFoundationNorURLSessionsLibraries() throws {
        let daemon = try DaemonHarness()
        // Read to the end: /proc files have no size, and a sized read stops at the first page.
        let handle = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/\(daemon.process.pid)/maps"))
        let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        let libraries = Set(maps.split(separator: "\n").compactMap { line -> String? in
            guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last, path.hasPrefix("/") else { return nil }
            return String(path.split(separator: "/").last!)
        })
        // URLSession's library and what it brings: libcurl, and through it gnutls, nettle,
        // nghttp2, libssh2, LDAP and Kerberos (about 4 MB resident on Debian 12). Then
        // Foundation itself, with its ICU: the daemon links FoundationEssentials only (6.3 MB
        // resident less, see docs/performance.md), so no import of Foundation creeps back.
        for unwanted in ["libFoundationNetworking.so", "libcurl", "libgnutls", "libldap", "libkrb5",
                         "libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            XCTAssertFalse(libraries.contains { $0.hasPrefix(unwanted) }, "\(unwanted) is mapped: \(libraries.sorted())")
        }
        // TLS comes from the system's OpenSSL.
        XCTAssertTrue(libraries.contains { $0.hasPrefix("libssl.so") }, "\(libraries.sorted())")
        let statistics = try ProcessStatistics(pid: daemon.process.pid)
        ProofRun.report(String(format: "footprint: idle daemon (no devices open yet) rss %.1f MB, %d libraries mapped",
                               Double(statistics.residentBytes) / 1_048_576, libraries.count))
    }
}
