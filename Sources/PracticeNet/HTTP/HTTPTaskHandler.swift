import FoundationEssentials

/// Receives one exchange's callbacks, on the HTTP client's serial queue (the shape of
/// URLSession's task delegate, which carried the requests before ``HTTPClient``).
package protocol TaskHandler: AnyObject, Sendable {
    func taskDidReceive(response: HTTPResponse)
    func taskDidReceive(data: Data)
    func taskDidSend(totalBytesSent: Int64, totalBytesExpected: Int64)
    func taskDidComplete(error: Error?)
}

/// A request in flight that can be stopped; its handler then hears `cancelled`.
package protocol TransportTask: AnyObject, Sendable {
    func cancel()
}
