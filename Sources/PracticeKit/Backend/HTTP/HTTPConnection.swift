import AudioKernel
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Who hears about a connection's readable bytes: the exchange using it, or the pool while
/// it waits for the next request.
protocol HTTPConnectionOwner: AnyObject {
    func connectionIsReadable(_ connection: HTTPConnection)
}

/// One non-blocking TCP connection to the backend, driven by Dispatch sources on the
/// client's serial queue.
///
/// The read source lives as long as the connection, from `connect` to the close: an
/// idle pooled connection must still notice the server closing it, and on Linux it is the
/// one source sure to hear a reset. libdispatch's epoll backend keeps one registration per
/// descriptor; a hang-up is delivered to the sources registered at that moment and then the
/// descriptor leaves epoll, so a source registered afterwards (say a read source made once
/// a connect completes) silently never fires. Registered first, the reader hears it always.
///
/// A write source exists only while a write waits for room in the socket buffer (or for
/// the connect), and is cancelled the moment it fires: a write source left armed on a
/// writable socket fires on every turn of the event loop, which is exactly what made
/// FoundationNetworking's transport spin a core for the length of each reply.
final class HTTPConnection {
    let fd: Int32
    /// `host:port`: the pool's key.
    let key: String
    private let queue: DispatchQueue
    private var reader: DispatchSourceRead?
    private var writer: DispatchSourceWrite?
    /// Sources whose cancel handler has not run yet; the descriptor is closed after the last.
    private var liveSources = 0
    private(set) var isClosed = false
    weak var owner: HTTPConnectionOwner?
    /// When it last finished a response (for the pool's age limit).
    var idleSince = DispatchTime.now()
    /// The connection's TLS once its handshake is done (`https://`): reads and writes go
    /// through it.
    var tls: TLSSession?

    init(fd: Int32, key: String, queue: DispatchQueue) {
        self.fd = fd
        self.key = key
        self.queue = queue
    }

    /// Starts watching for bytes (or the server's close).
    func startReading() {
        guard reader == nil, !isClosed else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in owner?.connectionIsReadable(self) }
        source.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        reader = source
        source.resume()
    }

    /// Calls `body` once when the socket can take more bytes (or has failed).
    func whenWritable(_ body: @escaping () -> Void) {
        guard writer == nil, !isClosed else { return }
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in
            cancelWriteWait()
            body()
        }
        source.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        writer = source
        source.resume()
    }

    /// Forgets a pending `whenWritable` (its body will not run).
    func cancelWriteWait() {
        writer?.cancel()
        writer = nil
    }

    /// Reads what is there: the byte count, 0 at the server's close, or an errno
    /// (EAGAIN when nothing is waiting).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        if let tls { return tls.read(into: buffer) }
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return .success(n) }
            if errno == EINTR { continue }
            return .failure(Errno(rawValue: errno))
        }
    }

    /// Sends what the socket takes now: the count (perhaps 0 when full) or the error.
    func send(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        if let tls { return tls.send(bytes) }
        while true {
            let n = Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .success(n) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .success(0) }  // full: wait for room
            return .failure(Errno(rawValue: errno))
        }
    }

    /// Stops both sources; the descriptor is closed once Dispatch has let go of it.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        owner = nil
        cancelWriteWait()
        reader?.cancel()
        reader = nil
        if liveSources == 0 { Glibc.close(fd) }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 && isClosed { Glibc.close(fd) }
    }
}
