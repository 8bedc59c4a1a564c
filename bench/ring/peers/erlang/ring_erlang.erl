%% SPDX-License-Identifier: MIT
%% ring_erlang: the ring benchmark (docs/ring.md) on Erlang processes, in
%% the shape of Joe Armstrong's process ring ("Programming Erlang", the
%% ring benchmark exercise): every coroutine is a process whose inbox is its
%% mailbox, and a hop is `Right ! V + 1` to a process blocked in `receive`.
%%
%% Run through the ring-erlang script, which starts
%%   erl -noshell [+S 1] -pa DIR -run ring_erlang main -extra --impl NAME
%%       --n N --coroutines C --rounds M [--runs K]
%% (+S 1: erlang-1t, one scheduler; without it: erlang, one per core).
%%
%% Each process first waits for {right, Pid}, then tells main it is ready
%% and blocks in its first receive. Main waits for all C of them, measures
%% VmRSS, starts the clock, sends the R start tokens and waits for the R
%% leaders' {done, Errors}; then stops the clock. A leader sends V+1 and
%% checks that V+N comes back, M times; a relay forwards V+1, M times, and
%% ends. Prints the two JSON lines of docs/bench-format.md; a wrong message
%% prints a "status":"failed" line and exits 1.
-module(ring_erlang).
-export([main/0]).

main() ->
    Opts = parse(init:get_plain_arguments(), #{runs => 1, impl => "erlang"}),
    N = maps:get(n, Opts), C = maps:get(coroutines, Opts), M = maps:get(rounds, Opts),
    K = maps:get(runs, Opts), Impl = maps:get(impl, Opts),
    if
        N < 2 -> usage("--n must be at least 2");
        C rem N =/= 0 -> usage("--coroutines must be a multiple of --n");
        true -> ok
    end,
    Params = io_lib:format("{\"n\":~b,\"coroutines\":~b,\"rounds\":~b}", [N, C, M]),
    Runs = [one_run(N, C, M, R =:= 1) || R <- lists:seq(1, K)],
    case [E || {_, _, E} <- Runs, E =/= 0] of
        [] -> ok;
        [Errors | _] ->
            Msg = io_lib:format("~b rounds came back with a wrong message", [Errors]),
            io:format(standard_error, "~s~n", [Msg]),
            io:format("{\"suite\":\"ring\",\"impl\":\"~s\",\"peer\":true,\"metric\":\"msgs_per_s\","
                      "\"value\":null,\"unit\":\"msgs/s\",\"status\":\"failed\",\"error\":\"~s\","
                      "\"params\":~s,\"runs\":~b}~n", [Impl, Msg, Params, K]),
            halt(1)
    end,
    Samples = [S || {S, _, _} <- Runs],
    [{_, Rss, _} | _] = Runs,
    Sorted = lists:sort(Samples),
    Median = case K rem 2 of
                 1 -> lists:nth(K div 2 + 1, Sorted);
                 0 -> (lists:nth(K div 2, Sorted) + lists:nth(K div 2 + 1, Sorted)) / 2
             end,
    io:format("{\"suite\":\"ring\",\"impl\":\"~s\",\"peer\":true,\"metric\":\"msgs_per_s\","
              "\"value\":~.1f,\"unit\":\"msgs/s\",\"params\":~s,\"runs\":~b,\"min\":~.1f,"
              "\"max\":~.1f,\"samples\":[~s]}~n",
              [Impl, float(Median), Params, K, float(hd(Sorted)), float(lists:last(Sorted)),
               lists:join(",", [io_lib:format("~.1f", [float(S)]) || S <- Samples])]),
    io:format("{\"suite\":\"ring\",\"impl\":\"~s\",\"peer\":true,\"metric\":\"rss_bytes_per_coro\","
              "\"value\":~.1f,\"unit\":\"bytes\",\"params\":~s,\"runs\":1,\"min\":~.1f,\"max\":~.1f}~n",
              [Impl, Rss, Params, Rss, Rss]),
    halt(0).

usage(Msg) ->
    io:format(standard_error, "ring_erlang: ~s~nusage: ring-erlang --schedulers 1|0 --n N "
              "--coroutines C --rounds M [--runs K]~n", [Msg]),
    halt(2).

parse([], Opts) ->
    case maps:is_key(n, Opts) andalso maps:is_key(coroutines, Opts) andalso maps:is_key(rounds, Opts) of
        true -> Opts;
        false -> usage("--n, --coroutines and --rounds are required")
    end;
parse(["--impl", V | Rest], Opts) -> parse(Rest, Opts#{impl => V});
parse([Flag, V | Rest], Opts) when Flag =:= "--n"; Flag =:= "--coroutines";
                                   Flag =:= "--rounds"; Flag =:= "--runs" ->
    Key = list_to_atom(tl(tl(Flag))),
    case string:to_integer(V) of
        {I, []} when I >= 1 -> parse(Rest, Opts#{Key => I});
        _ -> usage(Flag ++ " wants a positive integer, got '" ++ V ++ "'")
    end;
parse([Arg | _], _) -> usage("unknown argument '" ++ Arg ++ "'").

%% VmRSS of the emulator, in bytes.
rss_bytes() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    [Line] = [L || L <- binary:split(Status, <<"\n">>, [global]), binary:part(L, 0, min(6, byte_size(L))) =:= <<"VmRSS:">>],
    [_, Kib | _] = binary:split(Line, [<<" ">>, <<"\t">>], [global, trim_all]),
    binary_to_integer(Kib) * 1024.

%% One timed run: {msgs/s, RSS per process (first run only, else 0), errors}.
one_run(N, C, M, First) ->
    Main = self(),
    Rss0 = case First of true -> rss_bytes(); false -> 0 end,
    Pids = list_to_tuple([spawn(fun() -> member(Main, K rem N, N, M) end) || K <- lists:seq(0, C - 1)]),
    [element(K + 1, Pids) ! {right, element(K - K rem N + (K rem N + 1) rem N + 1, Pids)}
     || K <- lists:seq(0, C - 1)],
    [receive ready -> ok end || _ <- lists:seq(1, C)],
    Rss = case First of true -> (rss_bytes() - Rss0) / C; false -> 0.0 end,
    T0 = erlang:monotonic_time(nanosecond),
    [element(K + 1, Pids) ! start || K <- lists:seq(0, C - 1, N)],
    Errors = lists:sum([receive {done, E} -> E end || _ <- lists:seq(1, C div N)]),
    T1 = erlang:monotonic_time(nanosecond),
    {C * M / ((T1 - T0) / 1.0e9), Rss, Errors}.

member(Main, Index, N, M) ->
    Right = receive {right, R} -> R end,
    Main ! ready,
    case Index of
        0 -> receive start -> leader(Main, Right, N, M, 0, 0) end;
        _ -> relay(Right, M)
    end.

leader(Main, _Right, _N, 0, _V, Errors) ->
    Main ! {done, Errors};
leader(Main, Right, N, M, V, Errors) ->
    Right ! V + 1,
    receive
        Back when Back =:= V + N -> leader(Main, Right, N, M - 1, Back, Errors);
        Back when is_integer(Back) -> leader(Main, Right, N, M - 1, Back, Errors + 1)
    end.

relay(_Right, 0) -> ok;
relay(Right, M) ->
    receive V -> Right ! V + 1 end,
    relay(Right, M - 1).
