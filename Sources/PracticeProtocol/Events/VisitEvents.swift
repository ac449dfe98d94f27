import FoundationEssentials

// A learner's visit to the kiosk (topic `visit`).

extension Event {
    public struct VisitStarted: ProtocolEvent {
        public static let name = "visit.started"
        public static let topic = EventTopic.visit
        public static let summary = "A visit began: the first touch after the attract screen, or the first command that practises."
        public var visit: VisitState

        public init(visit: VisitState) { self.visit = visit }
    }

    public struct IdleWarning: ProtocolEvent {
        public static let name = "kiosk.idle_warning"
        public static let topic = EventTopic.visit
        public static let summary = "Nobody touched or spoke for `kiosk.idle_warning_s`, and nothing is in flight: the visit ends in `seconds_left` unless the learner touches the screen or speaks."
        public var secondsLeft: Double

        public init(secondsLeft: Double) { self.secondsLeft = secondsLeft }
    }

    public struct VisitResumed: ProtocolEvent {
        public static let name = "visit.resumed"
        public static let topic = EventTopic.visit
        public static let summary = "The warning is withdrawn: the learner touched the screen or spoke."
        public var visit: VisitState

        public init(visit: VisitState) { self.visit = visit }
    }

    public struct VisitEnded: ProtocolEvent {
        public static let name = "visit.ended"
        public static let topic = EventTopic.visit
        public static let summary = "The visit ended (`reason`: done, idle, signout, restart) and its learner is forgotten: conversation closed, transcripts and replies dropped, Chatterbox signed out on a shared kiosk. A UI goes back to its attract screen and clears its storage."
        public var reason: VisitEndReason
        public var visitId: String
        public var durationS: Double

        public init(reason: VisitEndReason, visitId: String, durationS: Double) {
            self.reason = reason
            self.visitId = visitId
            self.durationS = durationS
        }
    }
}
