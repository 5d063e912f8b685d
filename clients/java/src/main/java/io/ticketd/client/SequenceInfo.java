package io.ticketd.client;

import java.util.OptionalLong;

/**
 * A sequence as the server shows it: its bounds, the next ID a reservation would start at (empty
 * once exhausted) and how many IDs are left.
 */
public record SequenceInfo(String name, OptionalLong next, long start, long max, long remaining) {}
