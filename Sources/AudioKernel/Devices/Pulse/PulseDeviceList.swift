internal import CPulse

/// PulseAudio sinks and sources through libpulse's introspection API, on a private main
/// loop with a deadline so that a server that hangs cannot hang the caller.
enum PulseDeviceList {
    /// How long the whole listing may take.
    static let timeoutNanoseconds: Int64 = 2_000_000_000

    private final class Collector {
        var devices: [AudioDeviceInfo] = []
        var pending = 0
    }

    static func sinksAndSources(server: String?) throws(AudioError) -> [AudioDeviceInfo] {
        let operation = "listing PulseAudio sinks and sources"
        guard let loop = pa_mainloop_new() else {
            throw AudioError(.io, message: "pa_mainloop_new failed", operation: operation)
        }
        defer { pa_mainloop_free(loop) }
        guard let context = pa_context_new(pa_mainloop_get_api(loop), "practiced") else {
            throw AudioError(.io, message: "pa_context_new failed", operation: operation)
        }
        defer {
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        let deadline = Monotonic.now() + timeoutNanoseconds
        let connected = withOptionalCString(server) { pa_context_connect(context, $0, PA_CONTEXT_NOAUTOSPAWN, nil) }
        if connected < 0 {
            let code = pa_context_errno(context)
            throw AudioError(.openFailed, code: code, message: String(cString: pa_strerror(code)), operation: operation)
        }
        // Wait for the connection.
        while true {
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
                let code = pa_context_errno(context)
                throw AudioError(.openFailed, code: code, message: String(cString: pa_strerror(code)), operation: operation)
            }
            try iterate(loop, until: deadline, operation)
        }

        let collector = Collector()
        let box = Unmanaged.passRetained(collector)
        defer { box.release() }
        collector.pending = 2
        let sinks = pa_context_get_sink_info_list(context, { _, info, eol, userdata in
            let collector = Unmanaged<Collector>.fromOpaque(userdata!).takeUnretainedValue()
            if eol != 0 { collector.pending -= 1; return }
            guard let info, let name = info.pointee.name else { return }
            let description = info.pointee.description.map { String(cString: $0) } ?? ""
            collector.devices.append(AudioDeviceInfo(name: .pulse(device: String(cString: name)), description: description, direction: .playback))
        }, box.toOpaque())
        let sources = pa_context_get_source_info_list(context, { _, info, eol, userdata in
            let collector = Unmanaged<Collector>.fromOpaque(userdata!).takeUnretainedValue()
            if eol != 0 { collector.pending -= 1; return }
            guard let info, let name = info.pointee.name else { return }
            let description = info.pointee.description.map { String(cString: $0) } ?? ""
            collector.devices.append(AudioDeviceInfo(name: .pulse(device: String(cString: name)), description: description, direction: .capture))
        }, box.toOpaque())
        defer {
            if let sinks { pa_operation_unref(sinks) }
            if let sources { pa_operation_unref(sources) }
        }
        guard sinks != nil, sources != nil else {
            let code = pa_context_errno(context)
            throw AudioError(.io, code: code, message: String(cString: pa_strerror(code)), operation: operation)
        }
        while collector.pending > 0 { try iterate(loop, until: deadline, operation) }
        return collector.devices
    }

    /// Runs one main loop iteration, waiting at most until `deadline`.
    private static func iterate(_ loop: OpaquePointer, until deadline: Int64, _ operation: String) throws(AudioError) {
        let left = deadline - Monotonic.now()
        guard left > 0 else { throw AudioError(.io, message: "the server did not answer in time", operation: operation) }
        if pa_mainloop_prepare(loop, Int32(clamping: left / 1000)) < 0
            || pa_mainloop_poll(loop) < 0
            || pa_mainloop_dispatch(loop) < 0 {
            throw AudioError(.io, message: "the main loop failed", operation: operation)
        }
    }
}
