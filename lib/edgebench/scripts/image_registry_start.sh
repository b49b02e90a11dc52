# shellcheck shell=sh
# Own session, no open pipes (it outlives the command and an SSH session), tagged so that it is
# found again (runtimes/tags.py), its pid written down.
# Sent by edgebench.runtimes.image_registry (_START) as the text of one `sh -c`.
dir=$1; tag=$2
cd "$dir" || exit
env "$tag" setsid nohup docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 </dev/null &
echo $! >"$dir/pid"
