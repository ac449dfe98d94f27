import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol
import Synchronization

/// One client of the control socket: its reads, its queue of unsent output, its
/// subscriptions and limits. Confined to the server's queue.
final class ControlConnection: ServiceClient, @unchecked Sendable {
    let id: Int
    let fd: Int32
    let credentials: PeerCredentials
    unowned let server: ControlServer
    var topics: Set<EventTopic> = []
    /// When it last sent or was answered (the server's clock).
    var lastActivity: UInt64
    /// Requests decoded so far.
    var requests = 0
    /// Requests handed to the handler and not answered yet.
    var inFlight = 0
    /// Lines read and not yet served, at most ``maximumPending``; past it the socket is
    /// not read until they are (the client's own writes then block).
    private var pending: [[UInt8]] = []
    /// Lines read and not yet served (held back by the client's limits).
    var pendingCount: Int { pending.count }
    private static let maximumPending = 32
    private var readSuspended = false
    /// In the server's ready list (``ServiceScheduler``), or waiting for a token.
    private var serveScheduled = false
    /// Its place in the server's order of service (``ServiceScheduler``): lower goes first.
    var serviceKey = -Double.infinity
    /// The rate limit's token bucket.
    private var pacer: RequestPacer
    private var throttleLogged = false
    private var framer = LineFramer()
    private var outbound: [UInt8] = []
    private var outboundOffset = 0
    private var watch: DescriptorWatch?
    private var writeArmed = false
    private var isClosed = false
    private var closing = false

    init(id: Int, fd: Int32, credentials: PeerCredentials, server: ControlServer) {
        self.id = id
        self.fd = fd
        self.credentials = credentials
        self.server = server
        lastActivity = server.clock.now
        pacer = RequestPacer(now: lastActivity)
    }

    func start() {
        // A client that leaves while its requests wait unread (reading is suspended past
        // ``maximumPending``) is let go at once: nothing it asked can reach it.
        let watch = DescriptorWatch(fd: fd, queue: server.queue, onReadable: { [self] in readAvailable() }, onWritable: { [self] in flush() },
                                    onHangUp: { [self] in drop("hung up with \(pending.count) requests unserved") })
        self.watch = watch
        watch.setReading(true)
    }

    /// Queues a line; a client whose queue passes the limit is disconnected.
    func send(_ line: [UInt8]) {
        guard !isClosed, !closing else { return }
        outbound += line
        if outbound.count - outboundOffset > server.queueLimit {
            server.tooSlow(self)
            close()
            server.closed(self, reason: "too slow")
            return
        }
        flush()
    }

    /// Sends what is queued, then closes (after a fatal protocol error), the way HTTP
    /// servers do a "lingering close": closing a socket with input still unread makes the
    /// kernel answer with a reset, which can destroy the error reply before the client
    /// reads it. So the reply is flushed, the sending side shut down (the client reads the
    /// reply, then an orderly end), and whatever the client still sends is read and
    /// dropped until it hangs up, for at most two seconds.
    func closeAfterFlush() {
        guard !isClosed, !closing else { return }
        closing = true
        server.closed(self, reason: "protocol error")
        flush()
        server.clock.after(2, on: server.queue) { [self] in close() }
    }

    /// Drops the connection: told to the server, unless it already left it (closing).
    private func drop(_ reason: String) {
        close()
        if !closing { server.closed(self, reason: reason) }
    }

    private func flush() {
        guard !isClosed else { return }
        while outboundOffset < outbound.count {
            let n = outbound.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + outboundOffset, $0.count - outboundOffset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return drop("write failed: \(Errno(rawValue: errno).description)")
            }
            outboundOffset += n
        }
        if outboundOffset == outbound.count {
            outbound.removeAll(keepingCapacity: outbound.capacity <= 256 * 1024)
            outboundOffset = 0
            if writeArmed {
                watch?.setWriting(false)
                writeArmed = false
            }
            if closing { shutdown(fd, Int32(SHUT_WR)) }  // all sent: the client reads an end
        } else {
            if outboundOffset > 64 * 1024 {  // keep the buffer from growing at the front
                outbound.removeFirst(outboundOffset)
                outboundOffset = 0
            }
            if !writeArmed {
                watch?.setWriting(true)
                writeArmed = true
            }
        }
    }

    /// One read per event, its lines queued: every client is served a line at a time, the
    /// least served lately first (``ServiceScheduler``), so that flooding clients delay a
    /// client that asks now and then by about one request.
    private func readAvailable() {
        while !isClosed {
            let n = server.readBuffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                return drop("read failed: \(Errno(rawValue: errno).description)")
            }
            if n == 0 {
                return drop(framer.partialCount == 0 ? "hung up" : "hung up in the middle of a line (\(framer.partialCount) bytes dropped)")
            }
            lastActivity = server.clock.now
            consume(server.readBuffer[0..<n])
            if pending.count >= Self.maximumPending {
                suspendReading()
                return
            }
        }
    }

    private func suspendReading() {
        guard !readSuspended, !isClosed else { return }
        readSuspended = true
        watch?.setReading(false)
    }

    private func resumeReading() {
        guard readSuspended, !isClosed else { return }
        readSuspended = false
        watch?.setReading(true)
    }

    /// A request was answered: the next may go.
    func requestDone() {
        inFlight = max(0, inFlight - 1)
        lastActivity = server.clock.now
        scheduleServe()
    }

    private func scheduleServe(after delay: Double = 0) {
        guard !serveScheduled, !pending.isEmpty, !isClosed, !closing else { return }
        serveScheduled = true
        if delay > 0 {
            // Held back by the rate limit: ready again when a token is there.
            server.clock.after(delay, on: server.queue) { [self] in
                serveScheduled = false
                scheduleServe()
            }
        } else {
            // The server's scheduler decides whose line goes next.
            server.scheduler.add(self)
        }
    }

    /// The scheduler's turn for this client: one line, if it may.
    func takeTurn() {
        serveScheduled = false
        serveNext()
    }

    /// Serves one pending line, if the client is within its limits.
    private func serveNext() {
        guard !isClosed, !closing, !pending.isEmpty, inFlight < server.inFlightLimit else { return }
        if let wait = pacer.take(now: server.clock.now, rate: server.rateLimit) {
            if !throttleLogged {
                throttleLogged = true
                server.throttled(self)
            }
            return scheduleServe(after: wait)
        }
        let line = pending.removeFirst()
        server.scheduler.served(self, now: server.clock.now)
        server.received(line, from: self)
        if pending.count < Self.maximumPending / 2 { resumeReading() }
        scheduleServe()
    }

    private func consume(_ bytes: ArraySlice<UInt8>) {
        let outcome = framer.frame(bytes, into: &pending) { !isClosed && !closing }
        scheduleServe()
        if outcome == .lineTooLong { lineTooLong() }
    }

    private func lineTooLong() {
        server.reply(self, id: .null, .failure(ControlError(.lineTooLong, "a line may hold at most \(ControlProtocol.maximumLineBytes) bytes; closing")))
        closeAfterFlush()
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        pending.removeAll()
        // Out of epoll first, then closed: the number may be reused by the next accept.
        watch?.cancel()
        watch = nil
        Glibc.close(fd)
    }
}
