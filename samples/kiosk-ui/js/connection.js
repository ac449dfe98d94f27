// The practiced/1 control protocol over the kiosk bridge: practiced-kiosk-bridge relays a WebSocket's
// binary frames to the daemon's Unix socket, so the page speaks exactly what practicectl
// speaks (one JSON object per LF-terminated line) and the daemon's own peer check decides
// who may drive it. This module frames lines, matches replies to requests by id, hands
// events to listeners, and reconnects with backoff when the daemon or the bridge goes away.

import { Command, PROTOCOL } from "./protocol.js";

const MAX_LINE_BYTES = 65536;

/** A request the daemon answered with `ok: false`: its code, message and retryable flag. */
export class CommandError extends Error {
  constructor(command, error) {
    super(`${command}: ${error.code}: ${error.message}`);
    this.command = command;
    this.code = error.code;
    this.retryable = Boolean(error.retryable);
    this.detail = error.message;
    // `refused`: the backend's own reason (a hint such as invalid_login_code).
    this.reason = error.reason ?? null;
  }
}

/** Splits a byte stream into lines without losing a UTF-8 character cut between frames. */
class LineSplitter {
  constructor() {
    this.decoder = new TextDecoder("utf-8");
    this.pending = "";
  }

  push(bytes) {
    this.pending += this.decoder.decode(bytes, { stream: true });
    const lines = this.pending.split("\n");
    this.pending = lines.pop();
    if (this.pending.length > MAX_LINE_BYTES * 4) {
      // The daemon never writes a line this long; the stream is not practiced/1.
      this.pending = "";
      throw new Error("a line from the daemon is longer than the protocol allows");
    }
    return lines.filter((line) => line.length > 0);
  }
}

/**
 * One connection to the daemon, kept open: `connect()` once; `request()` sends a command
 * and resolves with its result; `onEvent`, `onState` and `onMessage` listeners hear events,
 * the link's state (connecting, open, closed) and every line read or written (the tests
 * check each against the protocol's JSON Schema).
 */
export class DaemonConnection {
  constructor(url, { topics, token = "", backoff = [500, 1000, 2000, 4000, 8000], requestTimeoutMs = 30000 } = {}) {
    this.url = url;
    // The bridge relays only a WebSocket that offers this start's token as a subprotocol
    // (beside `binary`, which it answers with).
    this.protocols = token ? ["binary", `practiced.token.${token}`] : ["binary"];
    this.topics = topics;
    this.backoff = backoff;
    this.requestTimeoutMs = requestTimeoutMs;
    this.nextId = 1;
    this.waiting = new Map();
    this.listeners = { event: [], state: [], message: [] };
    this.state = "closed";
    this.attempt = 0;
    this.socket = null;
    this.hello = null;
  }

  on(kind, listener) {
    this.listeners[kind].push(listener);
    return () => { this.listeners[kind] = this.listeners[kind].filter((l) => l !== listener); };
  }

  emit(kind, value) {
    for (const listener of this.listeners[kind]) {
      try { listener(value); } catch (error) { console.error(error); }
    }
  }

  setState(state, detail) {
    this.state = state;
    this.emit("state", { state, detail, attempt: this.attempt });
  }

  connect() {
    this.setState("connecting");
    const socket = new WebSocket(this.url, this.protocols);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    const lines = new LineSplitter();
    socket.onmessage = (message) => {
      const bytes = typeof message.data === "string" ? new TextEncoder().encode(message.data) : new Uint8Array(message.data);
      let received;
      try {
        received = lines.push(bytes);
      } catch (error) {
        socket.close();
        return;
      }
      for (const line of received) this.receive(line);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.hello = null;
      for (const [, pending] of this.waiting) pending.reject(new Error("the connection to the daemon closed"));
      this.waiting.clear();
      this.attempt += 1;
      const delay = this.backoff[Math.min(this.attempt - 1, this.backoff.length - 1)];
      this.setState("closed", { retryInMs: delay });
      this.retryTimer = setTimeout(() => this.connect(), delay);
    };
  }

  receive(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch (error) {
      console.error("not JSON from the daemon", line.slice(0, 200));
      return;
    }
    this.emit("message", { direction: "in", message });
    if (message.type === "hello") {
      this.hello = message;
      this.start();
    } else if (message.type === "reply") {
      const pending = this.waiting.get(message.id);
      if (!pending) return;
      this.waiting.delete(message.id);
      clearTimeout(pending.timer);
      if (message.ok) pending.resolve(message.result);
      else pending.reject(new CommandError(pending.command, message.error));
    } else if (message.type === "event") {
      this.emit("event", message);
    }
  }

  /** After the daemon's hello: name the protocol, then subscribe (the snapshot follows). */
  async start() {
    try {
      await this.request(Command.Hello, { protocol: PROTOCOL, client: "practiced kiosk UI" });
      await this.request(Command.Subscribe, { topics: this.topics });
      this.attempt = 0;
      this.setState("open");
    } catch (error) {
      console.warn("starting the connection failed; trying again", error);  // the link's state says it
      if (this.socket) this.socket.close();
    }
  }

  request(command, args = {}) {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error("not connected to the daemon"));
    }
    const id = this.nextId++;
    const message = { id, command, args };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.waiting.delete(id)) reject(new Error(`${command}: no answer within ${this.requestTimeoutMs} ms`));
      }, this.requestTimeoutMs);
      this.waiting.set(id, { resolve, reject, timer, command });
      this.emit("message", { direction: "out", message });
      socket.send(new TextEncoder().encode(JSON.stringify(message) + "\n"));
    });
  }

  /**
   * A command whose refusal goes to `refused(error)` (each flow tells its learner its own
   * way), never swallowed: the answer's data, or null when refused.
   */
  async act(command, args, refused) {
    try {
      return await this.request(command, args);
    } catch (error) {
      refused(error);
      return null;
    }
  }
}
