/* Shadow execution (shadow.c). */
#ifndef MPPROF_PROFILER_SHADOW_H
#define MPPROF_PROFILER_SHADOW_H

#include "profiler/call.h"
#include "profiler/op.h"

struct mpp_jw;
struct mpp_shadow_site;

/* Shadow one sampled call after it returned (host-visible operands at once,
 * device operands enqueued behind the op); a call that cannot be shadowed is
 * counted under its reason. */
void mpp_shadow_call(const mpp_call *c, const mpp_op *op);
/* Exit (not in a fork child): wait, bounded, for device shadows in flight and merge them. */
void mpp_shadow_drain(void);
/* The site's "shadow" object; call with the site lock held. */
void mpp_shadow_write(struct mpp_jw *w, struct mpp_shadow_site *s);

#endif
