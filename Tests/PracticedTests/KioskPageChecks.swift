import Foundation
import PracticeKit
import TestSupport
import XCTest

/// What the browser suite checks on every screen besides its flow: that text from a backend,
/// however long its words, stays inside the screen; that an emoji is drawn as a colour glyph;
/// that the page logged no error; that the bridge's token is nowhere but the launch page.
extension WebDriver {
    /// Every text the page holds from a backend (the TalkCo store's topics and profile, and
    /// its conversation state's lines, notices, review and summary; cue practice's learner, cards, answer and history) made
    /// one unbroken word of 2,000 characters, ids and wire names (`*_id`, `type`, `status`,
    /// …) kept, and the page drawn again from them. `restoreTexts()` puts the real ones back.
    func stretchTexts() throws {
        try run("""
            const keep = /^(id|.*_id|.*Id|type|status|stage|mode|kind|state|step|steps|issue_type|language|languages|default_language|code|who|direction|key|url|.*_url|signed_in|reason|stale)$/;
            const long = 'W'.repeat(1000) + 'https://practice.example/' + 'x'.repeat(975);
            const stretch = (value, key) => {
              if (typeof value === 'string') return keep.test(key ?? '') || value.length === 0 ? value : long;
              if (Array.isArray(value)) return value.map((item) => stretch(item, key));
              if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, stretch(v, k)]));
              return value;
            };
            const cues = window.practicedCues, store = window.practicedKiosk.store;
            if (cues) {
              const fields = ['learner', 'cards', 'cue', 'answer', 'history', 'viewing', 'notices'];
              window.__realTexts = Object.fromEntries(fields.map((f) => [f, cues[f]]));
              for (const f of fields) cues[f] = stretch(cues[f], f);
            } else {
              // The conversation's state is replaced whole (its functions never write into it).
              window.__realTexts = { state: store.state, topics: store.topics, profile: store.profile };
              const stretched = Object.fromEntries(['lines', 'notices', 'review', 'summary'].map((f) => [f, stretch(store.state[f], f)]));
              store.state = { ...store.state, ...stretched };
              store.topics = stretch(store.topics, 'topics');
              store.profile = stretch(store.profile, 'profile');
            }
            (cues ?? window.practicedKiosk).render();
            """)
    }

    func restoreTexts() throws {
        try run("""
            const cues = window.practicedCues, target = cues ?? window.practicedKiosk.store;
            Object.assign(target, window.__realTexts);
            delete window.__realTexts;
            (cues ?? window.practicedKiosk).render();
            """)
    }

    /// Elements whose right edge is past the viewport, scroll containers that scroll
    /// sideways, and a page wider than the screen: empty when the screen fits.
    func layoutProblems() throws -> [String] {
        let found = try run("""
            const width = document.documentElement.clientWidth, problems = [];
            const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\\s+/).join('.') : '');
            for (const e of document.querySelectorAll('body *')) {
              const box = e.getBoundingClientRect();
              if (box.width > 0 && box.right > width + 1) problems.push(`${name(e)}: right edge at ${Math.round(box.right)} px of ${width}`);
              const style = getComputedStyle(e);
              if ((style.overflowX === 'auto' || style.overflowX === 'scroll') && e.scrollWidth > e.clientWidth + 1)
                problems.push(`${name(e)}: scrolls sideways (${e.scrollWidth} px in ${e.clientWidth})`);
            }
            if (document.scrollingElement.scrollWidth > width + 1) problems.push(`the page scrolls sideways (${document.scrollingElement.scrollWidth} px)`);
            return problems.slice(0, 12);
            """)
        return (found.arrayValue ?? []).compactMap(\.stringValue)
    }

    /// The page's console entries at level SEVERE since the last call (an error the page
    /// logged, a resource that failed to load), less those matching `allowed`.
    func consoleErrors(allowing allowed: [String] = []) throws -> [String] {
        try consoleLog().compactMap { entry -> String? in
            guard entry["level"]?.stringValue == "SEVERE", let message = entry["message"]?.stringValue else { return nil }
            return allowed.contains(where: { message.contains($0) }) ? nil : message
        }
    }
}

enum KioskPageChecks {
    /// How many pixels of a PNG are strongly coloured (the spread of R, G and B over 80 of
    /// 255): a colour emoji has hundreds at 16 px; a missing glyph's box, the page's dark ink
    /// and its white or pale blue backgrounds have none. ffmpeg, a tool the project did not
    /// write, decodes the PNG.
    static func colouredPixels(inPNG path: String) throws -> Int {
        let raw = path + ".rgb"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let (status, _, errors) = try DaemonHarness.run("/usr/bin/ffmpeg", ["-y", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", raw], timeout: 30)
        guard status == 0, let pixels = FileManager.default.contents(atPath: raw) else { throw HarnessError(message: "ffmpeg could not read \(path): \(errors)") }
        var coloured = 0
        var index = pixels.startIndex
        while index + 2 < pixels.endIndex {
            let (r, g, b) = (Int(pixels[index]), Int(pixels[index + 1]), Int(pixels[index + 2]))
            if max(r, g, b) - min(r, g, b) > 80 { coloured += 1 }
            index += 3
        }
        return coloured
    }

    /// The files under `directory` (recursively) that hold `secret`, but `except`.
    static func files(under directory: String, holding secret: String, except: Set<String>) -> [String] {
        let needle = Data(secret.utf8)
        var holding: [String] = []
        for case let name as String in FileManager.default.enumerator(atPath: directory) ?? NSEnumerator() {
            let path = "\(directory)/\(name)"
            // Regular files only: a FIFO would never end, a socket cannot be read.
            let type = (try? FileManager.default.attributesOfItem(atPath: path)[.type]) as? FileAttributeType
            guard type == .typeRegular, !except.contains(path), let data = FileManager.default.contents(atPath: path), data.range(of: needle) != nil else { continue }
            holding.append(path)
        }
        return holding
    }
}
