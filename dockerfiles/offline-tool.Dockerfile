# edgebench tools (sysbench, iperf3), OFFLINE mode: no base image is pulled. The
# build context must contain rootfs/ laid out as the final filesystem:
#   rootfs/usr/local/bin/TOOL       the target's own binary (sysbench, iperf3)
#   rootfs/<abs path of each lib>   every shared library `ldd TOOL` lists
#   rootfs/usr/local/bin/steps      tools/steps, built static: runs a tool's
#                                   phases (prepare ::: run ::: cleanup) in
#                                   one container without a shell
#   rootfs/tmp                      scratch space (sysbench fileio writes here)
# The same binary as native, so a difference is the runtime's, not the build's.

FROM scratch
COPY rootfs/ /
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/steps"]
