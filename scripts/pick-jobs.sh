#!/bin/sh
# Prints how many compile jobs this machine can run at once, then why: one per core, but only as
# many as MemAvailable holds at MEM_PER_JOB_MB each (default 700: the heaviest translation unit
# peaks near 600 MB resident with g++ 12 at -O2 -g, README "Building on the Pi"). A 512 MB or
# 1 GB Pi gets 1 job instead of running out of memory with 2.
#   scripts/pick-jobs.sh  ->  "1 MemAvailable 812 MiB / 700 MiB per job, 4 cores"
per_job=${MEM_PER_JOB_MB:-700}
avail_kb=$(awk '/^MemAvailable:/ { print $2; exit }' /proc/meminfo 2>/dev/null)
cores=$(nproc 2>/dev/null || echo 1)
[ -n "$avail_kb" ] || { echo "$cores no MemAvailable in /proc/meminfo, $cores cores"; exit 0; }
avail_mb=$((avail_kb / 1024))
jobs=$((avail_mb / per_job))
[ "$jobs" -ge 1 ] || jobs=1
[ "$jobs" -le "$cores" ] || jobs=$cores
echo "$jobs MemAvailable $avail_mb MiB / $per_job MiB per job, $cores cores"
