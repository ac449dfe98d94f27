import FoundationEssentials

/// A request's body as the bytes on the wire, in parts written one after the other. A
/// turn's multipart body is its head, the recorder's WAV as it is, and its tail: the WAV is
/// never copied into one buffer on its way to the socket.
package struct HTTPBody: Sendable {
    package enum Part: Sendable {
        case data(Data)
        case bytes([UInt8])

        package var count: Int {
            switch self {
            case .data(let data): return data.count
            case .bytes(let bytes): return bytes.count
            }
        }
    }

    package let parts: [Part]
    /// Bytes in all.
    package let count: Int

    package init(parts: [Part]) {
        self.parts = parts
        count = parts.reduce(0) { $0 + $1.count }
    }

    package init(_ data: Data) { self.init(parts: [.data(data)]) }

    /// Calls `body` with the bytes from `offset` to the end of the part that holds it (a
    /// writer sends them, then asks again from where it got to).
    package func withBytes<R>(from offset: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var start = 0
        for part in parts {
            if offset < start + part.count {
                switch part {
                case .data(let data): return data.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[(offset - start)...])) }
                case .bytes(let bytes): return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[(offset - start)...])) }
                }
            }
            start += part.count
        }
        return body(UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// The whole body in one buffer (tests, logs).
    package var bytes: [UInt8] {
        var all: [UInt8] = []
        all.reserveCapacity(count)
        for part in parts {
            switch part {
            case .data(let data): all += data
            case .bytes(let bytes): all += bytes
            }
        }
        return all
    }
}
