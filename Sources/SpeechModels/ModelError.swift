/// Why a model file cannot be used. Each case names what was wrong so that the daemon's error
/// can name the file and the part of it.
public enum ModelError: Error, Equatable, CustomStringConvertible {
    /// Not an ONNX file, or one cut short.
    case malformed(String)
    /// A tensor the model needs is missing from the file.
    case missingTensor(String)
    /// A tensor has another shape or element type than the model needs.
    case wrongShape(String)
    /// The graph is not the one this code implements (another export or version).
    case unexpectedGraph(String)

    public var description: String {
        switch self {
        case .malformed(let what): "not a usable ONNX file: \(what)"
        case .missingTensor(let name): "the tensor \(name) is missing"
        case .wrongShape(let what): "wrong shape: \(what)"
        case .unexpectedGraph(let what): "not the graph this build implements: \(what)"
        }
    }
}
