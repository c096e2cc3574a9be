/* next_b.c -- the function next_a wraps. */
int next_probe(void) { return 7; }
