/*
 * golden.h -- comparing a program's text with a golden copy kept under
 * tests/golden/: how a refactoring proves its output did not move by a byte
 * (the three daemons' /metrics, issue 30).
 *
 * On a difference the test fails naming the first line that differs, and the
 * text it got is written to <build>/tests/<name>.actual, so that a deliberate
 * change is reviewed with diff and copied over the golden file.
 */
#ifndef VG_GOLDEN_H
#define VG_GOLDEN_H

/* tests/golden/<name> holds exactly actual, or the test fails. */
void vg_assert_golden(const char *name, const char *actual);

#endif
