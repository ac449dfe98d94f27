import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// ``LearnerData`` alone: a backend in memory, the offline cache on disk.
final class LearnerDataInMemoryTests: XCTestCase {
    func testTopicsAreKeptAndAnsweredStaleWhileTheBackendIsUnreachable() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("learner-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = SessionTestContext()
        let backend = MemoryBackend()
        let learner = LearnerData(context: context, backend: { backend }, stateDirectory: directory.path)
        func ask<C: ControlCommand>(_ command: C.Type, _ body: @escaping (CommandReply<C>) -> Void) -> Result<JSONValue, ControlError> {
            let result = Awaitable<Result<JSONValue, ControlError>?>(nil)
            context.run { body(CommandReply<C> { answer in result.update { $0 = answer } }) }
            XCTAssertTrue(result.wait(timeout: 5) { $0 != nil })
            return result.value!
        }
        backend.topicsAnswer = .success(try ProtocolDecoder.decode([Topic].self, from: [["id": "travel", "label_en": "Travel", "label_zh": "旅行", "prompt_hint": "a trip"]]))
        let fresh = try ask(Command.Topics.self) { learner.topics($0) }.get()
        XCTAssertEqual(fresh["stale"], false)
        XCTAssertEqual(fresh["age_s"], .null)

        backend.topicsAnswer = .failure(.transport(code: 111, message: "refused", sentNothing: true))
        let stale = try ask(Command.Topics.self) { learner.topics($0) }.get()
        XCTAssertEqual(stale["stale"], true)
        XCTAssertEqual(stale["topics"], fresh["topics"])
        XCTAssertNotNil(stale["error"]?.stringValue)

        // An answered error is not "offline": no stale answer hides it.
        backend.topicsAnswer = .failure(.http(status: 500, detail: "upstream"))
        XCTAssertThrowsError(try ask(Command.Topics.self) { learner.topics($0) }.get()) { XCTAssertEqual(($0 as? ControlError)?.code, .backendError) }
        // A call that changes something is never answered from the cache.
        backend.profileAnswer = .failure(.transport(code: 111, message: "refused", sentNothing: true))
        XCTAssertThrowsError(try ask(Command.Profile.self) { learner.profile(.init(action: .evaluate, learningGoal: nil), $0) }.get())
    }
}
