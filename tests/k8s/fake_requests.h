/* fake_requests.h -- what the tests ask tests/k8s/fake_apiserver.py about the
 * requests it served (its GET /_test/requests): which path, subresource or
 * not, a component's call went to. */
#ifndef VG_FAKE_REQUESTS_H
#define VG_FAKE_REQUESTS_H

#include "k8s.h"

/* The requests whose "VERB /path" (no query) starts with prefix, e.g.
 * "PATCH /api/v1/nodes/n1/status"; -1 when the fake cannot be asked (err
 * says why). */
long vg_fake_requests(struct vg_k8s_client *c, const char *prefix, struct vg_err *err);

#endif
