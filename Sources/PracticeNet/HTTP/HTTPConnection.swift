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

/// One non-blocking TCP connection to the backend, driven by a ``DescriptorWatch`` on the
/// client's serial queue (every method is called there).
///
/// Reading is wanted as long as the connection lives, from `connect` to the close: an idle
/// pooled connection must still notice the server closing it.
///
/// Writing is wanted only while a write waits for room in the socket buffer (or for the
/// connect), and is given up the moment it is granted: a writable socket watched for writing
/// is ready on every turn of the event loop, which is exactly what made
/// FoundationNetworking's transport spin a core for the length of each reply.
final class HTTPConnection {
    let fd: Int32
    /// `host:port`: the pool's key.
    let key: String
    private let queue: DispatchQueue
    private var watch: DescriptorWatch?
    /// What to run once the socket can take more bytes.
    private var writable: (() -> Void)?
    private(set) var isClosed = false
    weak var owner: HTTPConnectionOwner?
    /// When it last finished a response, on the client's clock (for the pool's age limit).
    var idleSince: UInt64
    /// The connection's TLS once its handshake is done (`https://`): reads and writes go
    /// through it.
    var tls: TLSSession?

    init(fd: Int32, key: String, queue: DispatchQueue, since now: UInt64) {
        self.fd = fd
        self.key = key
        self.queue = queue
        idleSince = now
    }

    private var descriptorWatch: DescriptorWatch {
        if let watch { return watch }
        let made = DescriptorWatch(fd: fd, queue: queue, onReadable: { [self] in owner?.connectionIsReadable(self) },
                                   onWritable: { [self] in
                                       let body = writable
                                       cancelWriteWait()
                                       body?()
                                   })
        watch = made
        return made
    }

    /// Starts watching for bytes (or the server's close).
    func startReading() {
        guard !isClosed else { return }
        descriptorWatch.setReading(true)
    }

    /// Calls `body` once when the socket can take more bytes (or has failed).
    func whenWritable(_ body: @escaping () -> Void) {
        guard writable == nil, !isClosed else { return }
        writable = body
        descriptorWatch.setWriting(true)
    }

    /// Forgets a pending `whenWritable` (its body will not run).
    func cancelWriteWait() {
        writable = nil
        watch?.setWriting(false)
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

    /// Stops watching and closes the descriptor (out of epoll first: its number may be
    /// reused by the next connect).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        owner = nil
        writable = nil
        watch?.cancel()
        watch = nil
        Glibc.close(fd)
    }
}
