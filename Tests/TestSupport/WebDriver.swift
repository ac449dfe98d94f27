import Foundation
import PracticeKit
import PracticeNet

/// A browser driven headless through its W3C WebDriver (JSON over HTTP on loopback): the
/// browser suite of the kiosk UI clicks, holds and types as a learner would, reads what the
/// page shows, and takes screenshots. Two browsers, each through its own Debian driver:
/// chromium through chromedriver, and WPE WebKit's cog (what the kiosk ships) through
/// `WPEWebDriver`, which starts cog on its headless platform.
public final class WebDriver {
    /// cog's settings that keep nothing of a visit, as samples/kiosk-ui/practiced-kiosk-ui
    /// runs it (its `cog_private`, read from there: the suite runs what ships).
    static let cogPrivate: [String] = {
        let launcher = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("samples/kiosk-ui/practiced-kiosk-ui").path
        let text = (try? String(contentsOfFile: launcher, encoding: .utf8)) ?? ""
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cog_private=\"") }) else { return [] }
        return line.dropFirst("cog_private=\"".count).dropLast().split(separator: " ").map(String.init)
    }()

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// An element of the page, as WebDriver names it.
    public struct Element {
        let id: String
    }

    public enum Browser: String, Sendable {
        case chromium
        /// cog on WPE WebKit. Its headless platform has one view size, 800 × 600, that
        /// WebDriver cannot change; it has no console log endpoint (the page's errors are
        /// collected in the page instead, see ``open(_:)``), and a W3C touch reaches the page
        /// as a mouse's pointer events.
        case wpe
    }

    public let browser: Browser
    private let driver: ChildProcess
    private let base: URL
    private let session: String
    /// The driver's and the browser's own files (chromium's profile among them).
    public let directory: URL
    /// The W3C name of an element reference in JSON.
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"
    /// The one view size of cog's headless platform.
    static let wpeViewport = (width: 800, height: 600)

    /// The page sizes this browser can show: the kiosk's two screens (the 7" 800 × 480 and
    /// 1280 × 800) on chromium, cog's one on WPE.
    public var kioskSizes: [(width: Int, height: Int)] {
        browser == .wpe ? [Self.wpeViewport] : [(800, 480), (1280, 800)]
    }

    /// Starts the driver and a headless browser whose page is `width` × `height` CSS
    /// pixels (on WPE, always 800 × 600).
    public init(width: Int, height: Int, browser: Browser = .chromium) throws {
        self.browser = browser
        directory = try makeTemporaryDirectory()
        let port = try Self.freePort()
        let (executable, name) = browser == .wpe ? ("/usr/bin/WPEWebDriver", "WPEWebDriver") : ("/usr/bin/chromedriver", "chromedriver")
        driver = try ChildProcess(executable: executable, arguments: ["--port=\(port)"], environment: ["PATH": "/usr/bin:/bin"],
                                  stdoutPath: directory.appendingPathComponent("\(name).log").path,
                                  stderrPath: directory.appendingPathComponent("\(name).err").path)
        base = URL(string: "http://127.0.0.1:\(port)")!
        let deadline = Date().addingTimeInterval(20)
        while true {
            do {
                _ = try Self.call(base, "GET", "/status", nil)
                break
            } catch {
                guard Date() < deadline else { throw Failure(description: "\(name) did not start: \(error)") }
                usleep(50_000)
            }
        }
        let capabilities: JSONValue
        switch browser {
        case .chromium:
            let arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                             "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=\(width),\(height)",
                             "--user-data-dir=\(directory.appendingPathComponent("profile").path)"].map { JSONValue.string($0) }
            capabilities = ["capabilities": ["alwaysMatch": [
                "browserName": "chrome",
                "goog:chromeOptions": ["binary": "/usr/bin/chromium", "args": .array(arguments)],
                "goog:loggingPrefs": ["browser": "ALL"],
            ]]]
        case .wpe:
            capabilities = ["capabilities": ["alwaysMatch": [
                "wpe:browserOptions": ["binary": "/usr/bin/cog", "args": .array((["--automation", "--platform=headless"] + Self.cogPrivate).map { JSONValue.string($0) })],
            ]]]
        }
        let created = try Self.call(base, "POST", "/session", capabilities)
        guard let session = created["sessionId"]?.stringValue else { throw Failure(description: "no WebDriver session: \(created)") }
        self.session = session
        if browser == .chromium { try resize(width: width, height: height) }
    }

    deinit {
        _ = try? Self.call(base, "DELETE", "/session/\(session)", nil)
        driver.terminate(signal: SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }

    /// The page's viewport set to exactly `width` × `height` (the window's own frame aside).
    /// On WPE, whose one size is 800 × 600, any other size is a failure, never ignored.
    public func resize(width: Int, height: Int) throws {
        guard browser == .chromium else {
            guard (width, height) == Self.wpeViewport else {
                throw Failure(description: "cog's headless view is 800 x 600: no \(width) x \(height) (use kioskSizes)")
            }
            return
        }
        _ = try command("POST", "/goog/cdp/execute", ["cmd": "Emulation.setDeviceMetricsOverride", "params": [
            "width": .int(width), "height": .int(height), "deviceScaleFactor": 1, "mobile": false,
        ]])
    }

    /// Opens `url`. On WPE, whose driver keeps no console log, the page then gets a
    /// collector of what chromium's log would call SEVERE (`console.error`, an uncaught
    /// error or rejection, a resource that failed to load), once its address has settled
    /// (the launch page moves on to the UI): what happened before that is not seen there.
    public func open(_ url: String) throws {
        _ = try command("POST", "/url", ["url": .string(url)])
        guard browser == .wpe else { return }
        var (address, settled) = ("", 0)
        let deadline = Date().addingTimeInterval(10)
        while settled < 3, Date() < deadline {
            let now = try run("return document.readyState === 'complete' ? location.href : ''").stringValue ?? ""
            settled = !now.isEmpty && now == address ? settled + 1 : 0
            address = now
            usleep(50_000)
        }
        try run("""
            if (window.__severe) return;
            window.__severe = [];
            const keep = (message) => window.__severe.push({ level: 'SEVERE', message: String(message) });
            const error = console.error.bind(console);
            console.error = (...parts) => { keep(parts.map(String).join(' ')); error(...parts); };
            window.addEventListener('error', (event) => {
              const source = event.target && (event.target.src || event.target.href);
              keep(source ? `${source} - failed to load` : `${event.message} (${event.filename}:${event.lineno})`);
            }, true);
            window.addEventListener('unhandledrejection', (event) => keep(`Uncaught (in promise) ${event.reason}`));
            """)
    }

    /// Runs `script` (a function body) in the page; its return value.
    @discardableResult
    public func run(_ script: String, _ arguments: [JSONValue] = []) throws -> JSONValue {
        try command("POST", "/execute/sync", ["script": .string(script), "args": .array(arguments)])
    }

    /// Runs `script` (a function body whose last argument is a callback) in the page, and
    /// waits for the value it calls back with (at most `timeout` seconds).
    @discardableResult
    public func runAsync(_ script: String, _ arguments: [JSONValue] = [], timeout: Double = 30) throws -> JSONValue {
        _ = try command("POST", "/timeouts", ["script": .int(Int(timeout * 1_000))])
        return try command("POST", "/execute/async", ["script": .string(script), "args": .array(arguments)])
    }

    /// The first element matching `selector`, or nil.
    public func find(_ selector: String) throws -> Element? {
        let found = try command("POST", "/elements", ["using": "css selector", "value": .string(selector)])
        guard let first = found.arrayValue?.first, let id = first[Self.elementKey]?.stringValue else { return nil }
        return Element(id: id)
    }

    /// Waits until `selector` matches an element (and `predicate` holds for its text).
    @discardableResult
    public func wait(for selector: String, timeout: Double = 20, text predicate: (String) -> Bool = { _ in true }) throws -> Element? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            // The page may re-render between the find and the read, or (WPEWebDriver) while
            // the elements are listed: look again.
            do {
                if let element = try find(selector), let text = try? text(element), predicate(text) { return element }
            } catch let failure as Failure where failure.description.contains("stale element") {}
            usleep(50_000)
        }
        return nil
    }

    /// Waits until `script` returns true.
    public func wait(until script: String, timeout: Double = 20) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try run(script).boolValue == true { return true }
            usleep(50_000)
        }
        return false
    }

    /// The element's rendered text. On WPE, its `innerText` read in the page: WPEWebDriver's
    /// own answer was empty for a title cut with an ellipsis that the page showed whole.
    public func text(_ element: Element) throws -> String {
        guard browser == .wpe else { return try command("GET", "/element/\(element.id)/text", nil).stringValue ?? "" }
        return try run("return arguments[0].innerText", [[Self.elementKey: .string(element.id)]]).stringValue ?? ""
    }

    /// A click as a learner's tap: WebDriver checks that the element is there and enabled.
    public func click(_ selector: String) throws {
        try onCurrent(selector, "to click") { _ = try command("POST", "/element/\($0.id)/click", .object([])) }
    }

    /// Types `text` into the field `selector`.
    public func type(_ text: String, into selector: String) throws {
        try onCurrent(selector, "to type into") { _ = try command("POST", "/element/\($0.id)/value", ["text": .string(text)]) }
    }

    /// `action` on the element `selector` names, found again if the page re-rendered it
    /// between finding and acting (a daemon's event redraws a screen at any moment, and the
    /// learner's tap lands on what is shown then), for at most 10 s.
    private func onCurrent(_ selector: String, _ purpose: String, _ action: (Element) throws -> Void) throws {
        let deadline = Date().addingTimeInterval(10)
        while true {
            guard let element = try wait(for: selector, timeout: max(0.1, deadline.timeIntervalSinceNow)) else {
                throw Failure(description: "no \(selector) \(purpose)")
            }
            do {
                return try action(element)
            } catch let failure as Failure where failure.description.contains("stale element reference") && Date() < deadline {
                continue
            }
        }
    }

    /// Presses (down) or releases (up) the pointer on `selector`: a push-to-talk hold. A
    /// mouse: chromedriver's touch input on headless chromium delivered the press of a
    /// held touch but never its release.
    public func pointer(_ down: Bool, on selector: String) throws { try pointer(down, on: selector, as: "mouse") }

    private func pointer(_ down: Bool, on selector: String, as kind: String) throws {
        guard let element = try find(selector) else { throw Failure(description: "no \(selector) to press") }
        let origin: JSONValue = [Self.elementKey: .string(element.id)]
        let steps: [JSONValue] = down
            ? [["type": "pointerMove", "origin": origin, "x": 0, "y": 0, "duration": 0], ["type": "pointerDown", "button": 0]]
            : [["type": "pointerUp", "button": 0]]
        _ = try command("POST", "/actions", ["actions": [["type": "pointer", "id": .string("\(kind)-finger"), "parameters": ["pointerType": .string(kind)],
                                                           "actions": .array(steps)]]])
    }

    /// A finger put on the middle of `selector` (down) or lifted, as the touch screen's
    /// driver reports it: Chrome DevTools' `Input.dispatchTouchEvent`, which goes through
    /// the browser's input pipeline (W3C touch actions on headless chromium deliver a held
    /// touch's press but not its release). On WPE, a W3C touch action: its headless
    /// platform hands it to the page as a mouse's pointer events.
    public func touch(_ down: Bool, on selector: String) throws {
        if browser == .wpe { return try pointer(down, on: selector, as: "touch") }
        let box = try run("""
            const r = document.querySelector(arguments[0]).getBoundingClientRect();
            return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
            """, [.string(selector)])
        guard let point = box.arrayValue, point.count == 2, let x = point[0].intValue, let y = point[1].intValue else { throw Failure(description: "no \(selector) to touch") }
        let points: JSONValue = down ? [["x": .int(x), "y": .int(y), "id": 1, "radiusX": 8, "radiusY": 8, "force": 1]] : []
        _ = try command("POST", "/goog/cdp/execute", ["cmd": "Input.dispatchTouchEvent", "params": [
            "type": down ? "touchStart" : "touchEnd", "touchPoints": points,
        ]])
    }

    /// A PNG of the viewport, written to `path`.
    public func screenshot(to path: String) throws {
        guard let encoded = try command("GET", "/screenshot", nil).stringValue, let png = Data(base64Encoded: encoded) else {
            throw Failure(description: "no screenshot")
        }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try png.write(to: URL(fileURLWithPath: path))
    }

    /// A PNG of the first element matching `selector`, written to `path`.
    public func screenshot(of selector: String, to path: String) throws {
        guard let element = try find(selector) else { throw Failure(description: "no \(selector) to photograph") }
        guard let encoded = try command("GET", "/element/\(element.id)/screenshot", nil).stringValue, let png = Data(base64Encoded: encoded) else {
            throw Failure(description: "no screenshot of \(selector)")
        }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try png.write(to: URL(fileURLWithPath: path))
    }

    /// The page's console messages since the last call (errors the page logged).
    public func consoleLog() throws -> [JSONValue] {
        guard browser == .wpe else { return (try command("POST", "/se/log", ["type": "browser"])).arrayValue ?? [] }
        return try run("const seen = window.__severe || []; window.__severe = []; return seen;").arrayValue ?? []
    }

    private func command(_ method: String, _ path: String, _ body: JSONValue?) throws -> JSONValue {
        try Self.call(base, method, "/session/\(session)\(path)", body)
    }

    /// One WebDriver call: its `value`, or its error as a Failure. Over ``RawHTTP``: the
    /// toolchain's URLSession fails on chromedriver's answers ("Failed writing header").
    static func call(_ base: URL, _ method: String, _ path: String, _ body: JSONValue?) throws -> JSONValue {
        let response: RawHTTPResponse
        do {
            response = try RawHTTP.exchange(base, method, path, contentType: body == nil ? nil : "application/json; charset=utf-8",
                                            body: body.map { Array($0.serialized(.compact).utf8) } ?? [], timeout: 60)
        } catch {
            throw Failure(description: "\(method) \(path): \(error)")
        }
        guard let answer = try? JSONDecoder().decode(JSONValue.self, from: Data(response.body)) else {
            throw Failure(description: "\(method) \(path): HTTP \(response.status), not JSON")
        }
        let value = answer["value"] ?? .null
        if let error = value["error"]?.stringValue {
            throw Failure(description: "\(method) \(path): \(error): \(value["message"]?.stringValue?.prefix(400) ?? "")")
        }
        return value
    }

    /// A loopback TCP port nobody listens on now.
    public static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "no free port") }
        return UInt16(bigEndian: address.sin_port)
    }
}
