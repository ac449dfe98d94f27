/// What a converter between the engine and a device holds, for the latency it adds and the
/// buffer it needs.
protocol DeviceConverter: AnyObject {
    /// Bytes of the device-format buffer one period of I/O needs.
    var deviceBufferBytes: Int { get }
    /// Frames held inside the converter: at the device's rate, and at the engine's.
    var heldFrames: (device: Int, engine: Int) { get }
}

extension OutputConverter: DeviceConverter {
    var deviceBufferBytes: Int { periodBytes }
    var heldFrames: (device: Int, engine: Int) { (bufferedFrames, 0) }
}

extension InputConverter: DeviceConverter {
    var deviceBufferBytes: Int { maximumBytes }
    var heldFrames: (device: Int, engine: Int) { (0, Int(delayFrames)) }
}

/// An open device backend with its converter and the period buffer in the device's format,
/// made each time the device opens (again after a reopen, at whatever format it now runs).
/// The runner sees it as the backend itself; its latency is counted in the engine's frames.
final class DevicePath<Backend, Converter: DeviceConverter>: DeviceBackend {
    let backend: Backend
    let converter: Converter
    let buffer: UnsafeMutableRawPointer
    private let common: any DeviceBackend
    private let engineRate: Int

    /// - Parameters:
    ///   - common: the backend as a ``DeviceBackend`` (`Backend` is an existential such as
    ///     `any PlaybackBackend`, which does not conform itself); closed when `makeConverter` fails.
    init(backend: Backend, common: any DeviceBackend, engineRate: Int, makeConverter: () throws(AudioError) -> Converter) throws(AudioError) {
        do {
            converter = try makeConverter()
        } catch {
            common.close()
            throw error
        }
        self.backend = backend
        self.common = common
        self.engineRate = engineRate
        buffer = .allocate(byteCount: converter.deviceBufferBytes, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: converter.deviceBufferBytes)
    }

    deinit { buffer.deallocate() }

    var format: StreamFormat { common.format }
    var periodFrames: Int { common.periodFrames }
    var reachedEnd: Bool { common.reachedEnd }
    func close() { common.close() }

    /// The device's latency and what waits in the converter, in the engine's frames.
    func latencyFrames() -> Int? {
        guard let device = common.latencyFrames() else { return nil }
        let held = converter.heldFrames
        return (device + held.device) * engineRate / common.format.sampleRate + held.engine
    }
}

typealias PlaybackPath = DevicePath<any PlaybackBackend, OutputConverter>
typealias CapturePath = DevicePath<any CaptureBackend, InputConverter>
