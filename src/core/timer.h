/* timer.h — monotonic wall-clock seconds. */
#ifndef RL_CORE_TIMER_H
#define RL_CORE_TIMER_H

double rl_time_now(void);

#endif
