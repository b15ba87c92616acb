/* experiments.h — validation experiments run by `khz-sim run` when a scene
 * has an `experiment:` block (experiments.c, docs/validation.md). */
#ifndef KHZ_EXPERIMENTS_H
#define KHZ_EXPERIMENTS_H

#include <stdio.h>

#include "khz/load.h"

/* A named parameter of the experiment, or fallback when the scene omits it. */
double khz_experiment_param(const khzExperiment *e, const char *name, double fallback);

/* Runs the experiment on a data reset to the scene's initial state and prints
 * its figures as one JSON object. Returns 0, or -1 with err set. */
int khz_experiment_run(const khzModel *m, khzData *d, const khzExperiment *e, FILE *out, char *err,
                       size_t errsz);

#endif
