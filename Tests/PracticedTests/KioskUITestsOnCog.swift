import TestSupport
import XCTest

/// The browser suite on cog (WPE WebKit), the browser the kiosk ships, through Debian's
/// `WPEWebDriver`: every test of ``KioskUITests`` that drives the page, at cog's one headless
/// size, 800 × 600 (the bridge's token test, which opens no browser, runs here too: 0.3 s).
/// Its screenshots go to `cog/` beside chromium's.
final class KioskUITestsOnCog: KioskUITests {
    override class var browserKind: WebDriver.Browser { .wpe }
}

extension KioskUITestsOnCog {
    /// WPEWebDriver keeps no console log: the collector the driver puts in the page sees
    /// what chromium's log calls SEVERE (a resource that failed to load, console.error, an
    /// uncaught error), so that every test's check of the console means something on cog.
    func testThePagesErrorsAreSeenOnCog() throws {
        try start()
        XCTAssertNotNil(try browser.wait(for: "#screen-topics"))
        XCTAssertEqual(try browser.consoleErrors(), [], "the page logged errors before this test made any")
        try browser.run("""
            document.body.append(Object.assign(document.createElement('img'), { src: '/no-such-icon.png' }));
            console.error('a logged error');
            setTimeout(() => { throw new Error('an uncaught error'); }, 0);
            """)
        XCTAssertTrue(try browser.wait(until: "return (window.__severe || []).length >= 3", timeout: 10), "the collector saw fewer than three errors")
        let errors = try browser.consoleErrors()
        for expected in ["no-such-icon.png", "a logged error", "an uncaught error"] {
            XCTAssertTrue(errors.contains { $0.contains(expected) }, "\(expected) not seen in \(errors)")
        }
    }
}
