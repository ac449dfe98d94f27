/// The protocol's events, one type each, grouped by what they tell (one file per group).
/// Published as `publish(Event.TurnSpooled(…))`.
public enum Event {}
