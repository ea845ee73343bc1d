/* scripts/global-qos-probe.c — used by scripts/test's deprecated-feature self-check.
 *
 * Connects to an AMQP URL and asks for a *global* basic.qos (a deprecated feature, reference §10
 * says hourglass never uses it), then a consumer QoS, and closes. RabbitMQ 4.3 answers qos-ok
 * either way and only logs the deprecated use, so scripts/test checks that the broker log shows
 * it: proof that its log check would catch hourglass doing the same.
 *
 * Build: cc -o global-qos-probe scripts/global-qos-probe.c -lrabbitmq
 * Usage: global-qos-probe AMQP-URL      exit 0 if the broker answered, 1 otherwise
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <string.h>

static int ok(amqp_rpc_reply_t reply, const char* what) {
    if (reply.reply_type == AMQP_RESPONSE_NORMAL) return 1;
    fprintf(stderr, "global-qos-probe: %s failed (reply type %d)\n", what, (int)reply.reply_type);
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s AMQP-URL\n", argv[0]);
        return 2;
    }
    char url[1024];
    snprintf(url, sizeof url, "%s", argv[1]);
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) {
        fprintf(stderr, "global-qos-probe: cannot parse the URL\n");
        return 2;
    }
    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t* socket = amqp_tcp_socket_new(conn);
    if (!socket || amqp_socket_open(socket, info.host, info.port) != AMQP_STATUS_OK) {
        fprintf(stderr, "global-qos-probe: cannot connect to %s:%d\n", info.host, info.port);
        return 1;
    }
    if (!ok(amqp_login(conn, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user,
                       info.password),
            "login"))
        return 1;
    amqp_channel_open(conn, 1);
    if (!ok(amqp_get_rpc_reply(conn), "channel.open")) return 1;
    /* prefetch 10 for the whole channel: global = true */
    if (!amqp_basic_qos(conn, 1, 0, 10, 1)) {
        ok(amqp_get_rpc_reply(conn), "basic.qos global");
        return 1;
    }
    /* the same per consumer (global = false), which is what hourglass does */
    if (!amqp_basic_qos(conn, 1, 0, 10, 0)) {
        ok(amqp_get_rpc_reply(conn), "basic.qos");
        return 1;
    }
    amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    puts("global-qos-probe: basic.qos global=true answered qos-ok");
    return 0;
}
