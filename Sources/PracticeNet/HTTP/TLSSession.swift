import AudioKernel
import COpenSSL
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The TLS settings every `https://` connection of a client shares: an OpenSSL context
/// that verifies the server's chain against the system's CA store (or `caFile`), offers
/// TLS 1.2 and 1.3 only, and lets a write be retried from a moved buffer.
///
/// Why not URLSession for `https://`: FoundationNetworking drives libcurl through Dispatch
/// and leaves the socket's write source armed for the length of a streamed reply; over TLS
/// that spun a core at 38 % for a conversation (issue 20: 22.9 s of CPU a minute against
/// 1.9 s over `http://`). The client's own transport watches for room to write only while a
/// write waits, and OpenSSL here is the library libcurl already loaded.
final class TLSContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Where trust comes from, for messages: the system store or the configured file.
    let trustSource: String

    /// A context trusting the system's CAs (OpenSSL's default paths, which honour
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR`), or only those in `caFile` (PEM).
    init(caFile: String? = nil) throws(TLSError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSError.last("creating the TLS context") }
        let trustSource = caFile.map { "the CA file \($0)" } ?? "the system's CA store"
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let loaded = caFile.map { SSL_CTX_load_verify_locations(context, $0, nil) } ?? SSL_CTX_set_default_verify_paths(context)
        guard loaded == 1 else {
            // Freed here, before `self` is whole: a throw after that would run deinit too.
            SSL_CTX_free(context)
            throw TLSError.last("loading \(trustSource)")
        }
        self.context = context
        self.trustSource = trustSource
        // SSL_CTX_set_min_proto_version and SSL_CTX_set_mode are macros over SSL_CTX_ctrl.
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        // A partial write is reported (non-blocking sockets); its retry may come from the
        // same bytes at another address (the request head is rebuilt from a Swift array).
        _ = SSL_CTX_ctrl(context, SSL_CTRL_MODE, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER), nil)
        // A server that closes without close_notify (many do, and proxies) ends the stream
        // like a TCP close: the HTTP parser still refuses a body cut short of its framing.
        // SSL_OP_IGNORE_UNEXPECTED_EOF is SSL_OP_BIT(7), a macro Swift cannot import.
        _ = SSL_CTX_set_options(context, UInt64(1) << 7)
    }

    deinit { SSL_CTX_free(context) }
}

/// Why a TLS step failed, in words a kiosk's operator can act on.
struct TLSError: Error, CustomStringConvertible {
    var description: String

    /// OpenSSL's error queue, emptied, as text.
    static func last(_ doing: String) -> TLSError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return TLSError(description: "TLS: \(doing) failed" + (reasons.isEmpty ? "" : ": " + reasons.joined(separator: "; ")))
    }
}

/// One connection's TLS, over a non-blocking socket: the handshake in steps driven by the
/// socket's readiness, then reads and writes that say "would block" as the socket does.
final class TLSSession {
    private let ssl: OpaquePointer
    private let host: String
    private let trustSource: String

    enum Step { case done, wantRead, wantWrite, failed(TLSError) }

    /// A session for `host` on the connected socket `fd`: SNI and the certificate's name
    /// checked against `host` (its IP address when `host` is a literal).
    init(context: TLSContext, fd: Int32, host: String) throws(TLSError) {
        guard let ssl = SSL_new(context.context) else { throw TLSError.last("creating a TLS session") }
        SSL_set_fd(ssl, fd)
        let checked: Int32
        if HTTPEndpoint.isNumeric(host) {
            checked = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            // SNI (SSL_set_tlsext_host_name is a macro over SSL_ctrl), then the name check.
            _ = host.withCString { SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) }
            checked = SSL_set1_host(ssl, host)
        }
        guard checked == 1 else {
            // Freed before `self` is whole: a throw after that would run deinit too.
            SSL_free(ssl)
            throw TLSError.last("setting the name to check (\(host))")
        }
        self.ssl = ssl
        self.host = host
        trustSource = context.trustSource
    }

    deinit { SSL_free(ssl) }

    /// Moves the handshake on as far as the socket allows.
    func handshake() -> Step {
        ERR_clear_error()
        let result = SSL_connect(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: return .failed(handshakeError(result))
        }
    }

    /// What went wrong in the handshake: the certificate check first, as it is the usual
    /// cause and OpenSSL's own queue only says "certificate verify failed".
    private func handshakeError(_ result: Int32) -> TLSError {
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
            let reason = String(cString: X509_verify_cert_error_string(verify))
            ERR_clear_error()
            if verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH {
                return TLSError(description: "TLS: the backend's certificate is not for \(host) (\(reason))")
            }
            return TLSError(description: "TLS: the backend's certificate for \(host) is not trusted by \(trustSource) (\(reason))")
        }
        let error = TLSError.last("the handshake with \(host)")
        if error.description.hasSuffix("failed"), result == 0 || errno != 0 {
            return TLSError(description: "TLS: the handshake with \(host) failed: the connection closed (\(result == 0 ? "end of stream" : Errno.current.description))")
        }
        return error
    }

    /// Reads decrypted bytes: the count, 0 at the end of the stream, or `.wouldBlock` when
    /// the socket has nothing more (OpenSSL may need to read to give more; the socket
    /// then reports readable again).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return .success(Int(n)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_ZERO_RETURN: return .success(0)
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .failure(.wouldBlock)
        case SSL_ERROR_SYSCALL where errno != 0: return .failure(.current)
        case SSL_ERROR_SYSCALL: return .success(0)
        default:
            ERR_clear_error()
            return .failure(Errno(rawValue: EPROTO))
        }
    }

    /// Encrypts and sends what the socket takes now: the count (0 when it must wait for
    /// room), or the error.
    func send(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        guard !bytes.isEmpty else { return .success(0) }
        ERR_clear_error()
        let n = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        if n > 0 { return .success(Int(n)) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ: return .success(0)
        case SSL_ERROR_SYSCALL where errno != 0: return .failure(.current)
        default:
            ERR_clear_error()
            return .failure(Errno(rawValue: EPIPE))
        }
    }
}
