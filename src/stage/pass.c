/* SPDX-License-Identifier: MIT */
/*
 * The deprecated stage without handler (stage.h rule 6): until the next
 * release, baton_stage_create() with attr.fn NULL still makes a stage that
 * tasks pass through. It is a front for a gate of the same attributes:
 * st->gate set, nothing else of the stage used (no ring, no runners, no
 * watch). The stage's public calls forward to the gate (stage.c), submit
 * and call refuse it; here are its creation and its passes, whose struct
 * baton_stage_pass names the stage where a gate's pass names the gate.
 */
#include "../common/alloc.h"
#include "stage_internal.h"

int baton__stage_create_gated(struct baton_stage **out, const struct baton_stage_attr *attr)
{
	const struct baton_gate_attr ga = {
		.name = attr->name,
		.queue_capacity = attr->queue_capacity,
		.concurrency = attr->concurrency,
		.needs = attr->needs,
		.nneeds = attr->nneeds,
	};
	struct baton_stage *st = baton__calloc(1, sizeof(*st));
	int rc;

	if (st == NULL)
		return BATON_ENOMEM;
	if ((rc = baton_gate_create(&st->gate, &ga)) != BATON_OK) {
		baton__free(st);
		return rc;
	}
	*out = st;
	return BATON_OK;
}

int baton_stage_enter(baton_stage_t *st, struct baton_stage_pass *p, int64_t timeout_ns)
{
	struct baton_gate_pass gp = BATON_GATE_PASS_INIT;
	int rc;

	if (st == NULL || p == NULL || p->stage != NULL || st->gate == NULL)
		return BATON_EINVAL;
	gp.t0 = p->t0;
	rc = baton_gate_enter(st->gate, &gp, timeout_ns);
	p->t0 = gp.t0;
	if (rc == BATON_OK)
		p->stage = st;
	return rc;
}

int baton_stage_leave(struct baton_stage_pass *p, int64_t *end_ns)
{
	struct baton_gate_pass gp = BATON_GATE_PASS_INIT;
	int rc;

	if (p == NULL || p->stage == NULL)
		return BATON_EINVAL;
	gp.gate = p->stage->gate;
	gp.t0 = p->t0;
	gp.kept = p->kept;
	p->stage = NULL;
	rc = baton_gate_leave(&gp, end_ns);
	p->kept = gp.kept;
	return rc;
}
