#!/usr/bin/python3
"""The demo's conversation through the learner UI (bash .ci/demo --ui).

Drives Debian's chromium, headless, through chromedriver's W3C WebDriver protocol (JSON
over HTTP on loopback; Python's standard library only), on the page the kiosk UI's
launcher serves: taps, a held push-to-talk button, typed text, as a learner would. The
learner's voice is played into the headless sound server's virtual microphone with paplay.
Prints what the page shows at each step and writes a screenshot of each screen at the two
kiosk sizes (800x480 and 1280x800) to OUT/screenshots. Exits non-zero when a step fails.

    demo-ui.py [--cues] ADDRESS OUT SAMPLES_DIR MIC_SINK

With --cues, the daemon behind the bridge practises Chatterbox's cue cards: sign-in with the
mailed code, the language, the cards, an answer held aloud, its transcript and evaluation,
hearing it again, the history.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class Failure(Exception):
    pass


class Browser:
    """A headless chromium behind chromedriver; one session."""

    def __init__(self, width, height):
        self.profile = tempfile.mkdtemp(prefix="practiced-demo-ui.")
        port = 9515 + os.getpid() % 1000
        self.driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                self.call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise Failure("chromedriver did not start")
                time.sleep(0.05)
        arguments = ["--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
                     "--force-device-scale-factor=1", f"--window-size={width},{height}", f"--user-data-dir={self.profile}"]
        if os.getuid() == 0:
            arguments.append("--no-sandbox")  # chromium's sandbox refuses root
        created = self.call("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": arguments}}}})
        self.session = created["sessionId"]
        self.resize(width, height)

    def close(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        finally:
            self.driver.terminate()
            subprocess.run(["rm", "-rf", self.profile], check=False)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as error:
            raise Failure(f"{method} {path}: {error.read().decode(errors='replace')[:300]}") from None
        return answer.get("value") if isinstance(answer, dict) and "value" in answer else answer

    def command(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def resize(self, width, height):
        # The page's viewport exactly, whatever the window's frame.
        self.command("POST", "/goog/cdp/execute", {"cmd": "Emulation.setDeviceMetricsOverride",
                                                   "params": {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}})

    def open(self, url):
        self.command("POST", "/url", {"url": url})

    def run(self, script, *arguments):
        return self.command("POST", "/execute/sync", {"script": script, "args": list(arguments)})

    def find(self, selector):
        found = self.command("POST", "/elements", {"using": "css selector", "value": selector})
        return found[0][ELEMENT] if found else None

    def wait(self, condition, timeout=30, what=""):
        """Waits until the script `condition` returns true; fails at the deadline."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.run(condition):
                return
            time.sleep(0.1)
        raise Failure(f"waited {timeout} s for {what or condition}")

    def wait_for(self, selector, timeout=30):
        self.wait(f"return document.querySelector({json.dumps(selector)}) !== null", timeout, selector)

    def on_current(self, selector, purpose, action):
        """`action` on the element `selector` names, found again when the page re-rendered it
        between finding and acting (a daemon's event redraws a screen at any moment, and a
        learner's tap lands on what is shown then), for at most 10 s."""
        deadline = time.monotonic() + 10
        while True:
            element = self.find(selector)
            if element is None:
                if time.monotonic() > deadline:
                    raise Failure(f"no {selector} {purpose}")
                time.sleep(0.05)
                continue
            try:
                return action(element)
            except Failure as failure:
                if "stale element reference" not in str(failure) or time.monotonic() > deadline:
                    raise

    def click(self, selector):
        self.on_current(selector, "to tap", lambda element: self.command("POST", f"/element/{element}/click", {}))

    def type(self, text, selector):
        self.on_current(selector, "to type into", lambda element: self.command("POST", f"/element/{element}/value", {"text": text}))

    def pointer(self, down, selector):
        def act(steps):
            self.command("POST", "/actions", {"actions": [{"type": "pointer", "id": "finger", "parameters": {"pointerType": "mouse"}, "actions": steps}]})
        if down:
            self.on_current(selector, "to press", lambda element: act([
                {"type": "pointerMove", "origin": {ELEMENT: element}, "x": 0, "y": 0, "duration": 0}, {"type": "pointerDown", "button": 0}]))
        else:
            act([{"type": "pointerUp", "button": 0}])

    def screenshot(self, path):
        with open(path, "wb") as file:
            file.write(base64.b64decode(self.command("GET", "/screenshot")))


def main():
    arguments = sys.argv[1:]
    practising_cues = arguments[:1] == ["--cues"]
    address, out, samples, mic = arguments[1:5] if practising_cues else arguments[0:4]
    shots = os.path.join(out, "screenshots")
    os.makedirs(shots, exist_ok=True)
    browser = Browser(1280, 800)

    def step(text):
        print(f"\n\033[1m== {text}\033[0m", flush=True)

    def shoot(name):
        for width, height in ((800, 480), (1280, 800)):
            browser.resize(width, height)
            path = os.path.join(shots, f"{name}-{width}x{height}.png")
            browser.screenshot(path)
        print(f"   screenshots: {shots}/{name}-{{800x480,1280x800}}.png")

    def stage(name, timeout=60):
        browser.wait(f"return window.practicedKiosk && window.practicedKiosk.store.session.stage === '{name}'", timeout, f"stage {name}")

    def lines(kind):
        return browser.run(f"return [...document.querySelectorAll('.line.{kind}')].map(e => (e.querySelector('.said') || e).textContent)")

    def say(phrase):
        subprocess.run(["paplay", "-d", mic, os.path.join(samples, f"{phrase}.wav")], check=True)

    if practising_cues:
        try:
            cue_practice(browser, address, step, shoot, say)
        finally:
            browser.close()
        return

    try:
        step("the page, through the bridge: the attract screen, then a touch begins the visit: the topics")
        browser.open(address)
        browser.wait_for("#attract", 30)
        shoot("attract")
        browser.click("#attract")
        browser.wait_for("[data-topic='travel']")
        print("   topics:", ", ".join(browser.run("return [...document.querySelectorAll('.topic')].map(e => e.innerText.replace(/\\n/g, ' / '))")))
        shoot("topics")

        step("tap the travel topic: the greeting plays, its words show with it")
        browser.click("[data-topic='travel']")
        browser.wait_for(".line.tutor", 60)
        stage("ready")
        print("   tutor:", lines("tutor")[-1])
        shoot("conversation")

        step("hold 按住說話 (push-to-talk) while the learner speaks, then let go")
        browser.pointer(True, "#talk")
        stage("recording", 10)
        say("learner-2")
        time.sleep(0.3)  # the learner lets go a moment after the last word
        browser.pointer(False, "#talk")
        browser.wait("return document.querySelectorAll('.line.you').length >= 1", 60, "the transcript")
        browser.wait("return document.querySelectorAll('.line.tutor').length >= 2", 60, "the reply's words")
        stage("ready")
        print("   you:  ", lines("you")[-1])
        print("   tutor:", lines("tutor")[-1])

        step("hands-free: the turn ends by itself when the learner stops talking")
        browser.click("#hands-free")
        stage("listening")
        say("learner-1")
        browser.wait("return document.querySelectorAll('.line.you').length >= 2", 60, "the hands-free turn's transcript")
        browser.wait("return document.querySelectorAll('.line.tutor').length >= 3", 60, "its reply")
        stage("listening")
        browser.click("#hands-free")
        stage("ready")
        print("   you:  ", lines("you")[-1])
        print("   tutor:", lines("tutor")[-1])

        step("push-to-talk held in silence: the page says nothing was heard; nothing is sent")
        browser.pointer(True, "#talk")
        stage("recording", 10)
        time.sleep(1)  # the learner holds the button and says nothing
        browser.pointer(False, "#talk")
        browser.wait_for("[data-notice='noSpeech']", 15)
        notice = browser.run("return document.querySelector(\"[data-notice='noSpeech']\").innerText")
        print("   notice:", " ".join(line for line in notice.splitlines() if line.strip() not in ("", "×")))
        shoot("conversation-silent-turn")
        stage("ready")

        step("a typed turn")
        browser.type("I would like to visit Kyoto in the spring.", "#say-input")
        browser.click("#say button[type=submit]")
        browser.wait("return document.querySelectorAll('.line.you').length >= 3", 60, "the typed turn")
        stage("ready")
        print("   tutor:", lines("tutor")[-1])

        step("結束對話 (end): the review, its marks coloured by issue type")
        browser.click("#end")
        browser.wait_for("#screen-review")
        stage("reviewed", 90)
        browser.wait("return document.querySelectorAll('.mark').length > 0", 30, "the marks")
        for mark in browser.run("return [...document.querySelectorAll('.mark')].map(e => e.innerText.replace(/\\n/g, ' '))"):
            print("   mark:", mark)
        shoot("review")

        step("ask about a segment: the correction arrives")
        corrections = browser.run("return document.querySelectorAll('.correction').length")
        browser.type("How do I say this more naturally?", ".segment .ask-input")
        browser.click(".segment .ask button[type=submit]")
        browser.wait(f"return document.querySelectorAll('.correction').length > {corrections}", 60, "the correction")
        print("   correction:", browser.run("return [...document.querySelectorAll('.correction')].pop().innerText.replace(/\\n/g, ' ')"))

        step("結束學習 (finish): the summary")
        browser.click("#finish")
        browser.wait_for("#screen-summary", 90)
        browser.wait_for("#overall", 10)
        print("   overall:", browser.run("return document.getElementById('overall').innerText"))
        shoot("summary")
        browser.click("#done")
        browser.wait_for("#screen-topics", 30)
        stage("idle")

        step("我的 (profile): the level after a re-evaluation, the three weak-point dimensions")
        browser.click("#tab-profile")
        browser.wait_for("#cefr", 30)
        browser.click("#evaluate")
        browser.wait("return /^[ABC][12]$/.test(document.getElementById('cefr').textContent)", 30, "a CEFR level")
        print("   level:", browser.run("return document.getElementById('cefr').textContent"))
        shoot("profile")

        step("弱點複習 (weak-point review): a review-mode session ends at home")
        browser.click("#tab-practice")
        browser.wait_for("#review-mode", 30)
        browser.click("#review-mode")
        stage("ready", 60)
        shoot("review-mode")
        browser.click("#end")
        browser.wait_for("#screen-topics", 30)
        stage("idle")
        none_refused(browser)

        step("我說完了 (I'm done): the visit ends, the page forgets it and shows the attract screen")
        browser.click("#visit-done")
        browser.wait_for("#visit-confirm", 10)
        browser.click("#visit-confirm-end")
        browser.wait("return document.body.dataset.visit === 'none' && document.getElementById('attract') !== null", 30, "the attract screen")
        shoot("attract-after-visit")
    finally:
        browser.close()


def none_refused(browser):
    """Every command the page sent was answered, none refused."""
    refused = browser.run("return window.practicedKiosk.messages.filter(m => m.message.ok === false).length")
    if refused:
        raise Failure(f"the daemon refused {refused} of the page's commands")
    print("   the daemon refused none of the page's commands")


def cue_practice(browser, address, step, shoot, say):
    """The cue screens, driven as a learner would."""
    def answer_state(name, timeout=60):
        browser.wait(f"return window.practicedCues && window.practicedCues.answer && window.practicedCues.answer.state === '{name}'",
                     timeout, f"the answer {name}")

    step("the page on a Chatterbox daemon: sign in (in English)")
    browser.open(address)
    browser.wait_for("#attract", 30)
    browser.click("#attract")
    browser.wait_for("#screen-signin", 30)
    browser.click("#language")
    browser.wait("return document.getElementById('send-code').textContent.length > 0", 10, "the English page")
    shoot("cue-signin")
    email = "learner@kiosk.invalid"
    browser.type(email, "#email")
    browser.click("#send-code")
    browser.wait_for("#code-form", 30)
    print("  ", browser.run("return document.getElementById('code-sent').textContent"))
    browser.type("123456", "#code")
    shoot("cue-signin-code")
    browser.click("#sign-in")

    step("the cue cards, in the learner's language")
    browser.wait_for("#screen-cards", 30)
    browser.wait("return document.querySelectorAll('.cue-card').length > 0", 30, "the cards")
    print("   learner:", browser.run("return document.getElementById('learner').textContent"))
    for title in browser.run("return [...document.querySelectorAll('.cue-card .card-title')].map(e => e.textContent)"):
        print("   card:", title)
    shoot("cue-cards")
    browser.click("[data-language='fr']")
    browser.wait("return document.getElementById('learner').textContent.endsWith('FR')"
                 " && document.getElementById('cue-grid').getAttribute('aria-busy') === 'false'", 30, "French")
    shoot("cue-cards-fr")
    browser.click("[data-language='en']")
    browser.wait("return document.getElementById('learner').textContent.endsWith('EN')"
                 " && document.getElementById('cue-grid').getAttribute('aria-busy') === 'false'", 30, "English again")

    # (the cards of a new language come after the learner's language; until then they are busy)
    step("answer the first card: hold the button while the learner speaks, then let go")
    browser.click(".cue-card")
    browser.wait_for("#screen-answer", 30)
    print("   card:", browser.run("return document.getElementById('cue-title').textContent"))
    browser.pointer(True, "#cue-talk")
    answer_state("recording", 10)
    shoot("cue-answer-recording")
    say("learner-1")
    time.sleep(0.3)  # the learner lets go a moment after the last word
    browser.pointer(False, "#cue-talk")
    browser.wait_for("#transcript", 60)
    browser.wait("return (document.getElementById('cue-cefr') || {}).textContent", 60, "the evaluation")
    print("   transcript:", browser.run("return document.querySelector('#transcript .said').textContent"))
    print("   level:", browser.run("return document.getElementById('cue-cefr').textContent"))
    shoot("cue-results")
    browser.click("#hear")

    step("the history: the answer with its results")
    browser.click("#back")
    browser.wait_for("#tab-history", 30)
    browser.click("#tab-history")
    browser.wait("return document.querySelectorAll('.history-item').length > 0", 30, "the history")
    shoot("cue-history")
    browser.click(".history-item")
    browser.wait_for("#screen-recording", 30)
    shoot("cue-history-recording")
    none_refused(browser)


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        print(f"demo-ui: {failure}", file=sys.stderr)
        sys.exit(1)
