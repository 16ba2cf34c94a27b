/* prompt_reward.h — the reward the critic tests learn (test_ppo.c, test_ppo_shared.c): an
 * external program scoring prompts "p1" and "p3" 1 and every other prompt 0, whatever the
 * completion, so only the prompt decides the return. */
#ifndef RLC_TESTS_PROMPT_REWARD_H
#define RLC_TESTS_PROMPT_REWARD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

/* Writes the program to a fresh file named in script (a mkstemp template, at least 32 bytes),
 * and its reward spec ("cmd:sh FILE") to spec. The caller unlinks script. */
static inline void prompt_reward_write(char *script, char *spec, size_t spec_size)
{
    strcpy(script, "/tmp/rlc-prompt-reward-XXXXXX");
    int fd = mkstemp(script);
    cr_assert(fd >= 0);
    const char *text = "while read line; do case \"$line\" in *'\"p1\"'* | *'\"p3\"'*) echo '{\"reward\": 1}';; "
                       "*) echo '{\"reward\": 0}';; esac; done\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(spec, spec_size, "cmd:sh %s", script);
}

#endif
