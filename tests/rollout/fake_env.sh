#!/bin/sh
# fake_env.sh MODE — an environment program for the episode tests (docs/episodes.md). Reads
# one JSON line per turn and answers by MODE:
#   echo      an observation "obs <turn>" until the last turn, then {"done": true, "reward": <turn + 1>}
#   done      {"done": true, "reward": 0.5} at once
#   crash     exits (status 3) at the first turn of episode 1, answers like echo otherwise
#   hang      sleeps at episode 1, answers like echo otherwise
#   garbage   prints a non-JSON line for episode 1, answers like echo otherwise
#   nodone    always an observation, also on the last turn
mode="$1"
while IFS= read -r line; do
    ep=$(printf '%s' "$line" | sed -n 's/.*"episode":\([0-9]*\).*/\1/p')
    turn=$(printf '%s' "$line" | sed -n 's/.*"turn":\([0-9]*\).*/\1/p')
    last=$(printf '%s' "$line" | grep -c '"last":true')
    if [ "$ep" = 1 ]; then
        case "$mode" in
        crash) exit 3 ;;
        hang) sleep 30 ;;
        garbage) echo "this is not json"; continue ;;
        esac
    fi
    case "$mode" in
    done) echo '{"done": true, "reward": 0.5}' ;;
    nodone) echo "{\"observation\": \"obs $turn\"}" ;;
    *)
        if [ "$last" = 1 ]; then echo "{\"done\": true, \"reward\": $((turn + 1))}"
        else echo "{\"observation\": \"obs $turn\"}"; fi ;;
    esac
done
