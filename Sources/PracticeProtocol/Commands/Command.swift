/// The protocol's commands, one type each with its arguments and result, grouped by who
/// answers them (one file per group).
public enum Command {}
