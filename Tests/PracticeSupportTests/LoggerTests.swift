import PracticeSupport
import Synchronization
import XCTest

/// The log's threshold: a record below it is never formatted (messages are autoclosures),
/// and the filtering sink's threshold moves at run time (SIGHUP's `log.level`).
final class LoggerTests: XCTestCase {
    final class Collecting: LogSink, @unchecked Sendable {
        let records = Mutex<[String]>([])
        func write(_ record: LogRecord) { records.withLock { $0.append("\(record.level) \(record.category): \(record.message)") } }
    }

    func testARecordBelowTheThresholdIsNeitherFormattedNorWritten() {
        let sink = Collecting()
        let logger = Logger(category: "session", sink: sink, threshold: .notice)
        var formatted = 0
        func message(_ text: String) -> String { formatted += 1; return text }
        logger.debug(message("hidden"))
        logger.info(message("hidden too"))
        logger.warning(message("shown"))
        logger.named("cue").error(message("shown, as cue"))
        XCTAssertEqual(formatted, 2, "the messages below the threshold were never made")
        XCTAssertEqual(sink.records.withLock { $0 }, ["warning session: shown", "error cue: shown, as cue"])
        XCTAssertFalse(logger.isEnabled(.info))
        XCTAssertTrue(logger.isEnabled(.notice))
    }

    func testTheFilteringSinksThresholdMovesAtRunTime() {
        let sink = Collecting()
        let filter = FilteringLogSink(sink, threshold: .warning)
        filter.write(LogRecord(level: .info, category: "daemon", message: "dropped"))
        filter.threshold = .debug  // a reload to log.level = debug
        filter.write(LogRecord(level: .info, category: "daemon", message: "kept"))
        XCTAssertEqual(filter.threshold, .debug)
        XCTAssertEqual(sink.records.withLock { $0 }, ["info daemon: kept"])
    }
}
