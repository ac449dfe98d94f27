import FoundationEssentials

// A learner's visit to the kiosk (topic `visit`): answered by the daemon, whatever its flow.

extension Command {
    public enum VisitTouch: ControlCommand {
        public static let name = "visit.touch"
        public static let route = CommandRoute.daemon
        public static let summary = "The learner touched the screen: begins a visit from the attract screen, starts the idle clock again and withdraws a warning (`visit.resumed`). Refused (retryable) while the last visit is ending."
        public typealias Arguments = NoArguments
        public typealias Result = VisitState
    }

    public enum VisitEnd: ControlCommand {
        public static let name = "visit.end"
        public static let route = CommandRoute.daemon
        public static let summary = "\"I'm done\": the visit ends (`reason: done`) and its learner is forgotten once what it left in flight is delivered (`visit.ended`). With no visit, answers the state unchanged."
        public typealias Arguments = NoArguments
        public typealias Result = VisitState
    }
}
