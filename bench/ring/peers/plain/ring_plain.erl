%% SPDX-License-Identifier: MIT
%% The ring as Joe Armstrong writes it ("Programming Erlang", the ring
%% benchmark exercise): not a peer of the suite, the yardstick ring_erlang
%% is checked against (docs/ring.md). Each ring's first process spawns the
%% others as a chain (each told the pid after it, the last one the first),
%% sends the message round M times, then a `stop` round; processes are
%% `loop(Next)` functions that forward what they receive. The clock
%% (statistics(wall_clock)) runs from the first spawn to the last ring's
%% end. No start-up barrier, no RSS.
%%
%%   erlc ring_plain.erl && erl -noshell [+S 1] -run ring_plain main N C M -s init stop
%%
%% prints msgs/s.
-module(ring_plain).
-export([main/1]).

main([N0, C0, M0]) ->
    [N, C, M] = [list_to_integer(A) || A <- [N0, C0, M0]],
    Self = self(),
    statistics(wall_clock),
    [spawn(fun() -> ring(Self, N, M) end) || _ <- lists:seq(1, C div N)],
    [receive done -> ok end || _ <- lists:seq(1, C div N)],
    {_, Ms} = statistics(wall_clock),
    io:format("~.1f~n", [C * M / (Ms / 1000)]).

ring(Main, N, M) ->
    Next = lists:foldl(fun(_, After) -> spawn(fun() -> loop(After) end) end, self(),
                       lists:seq(1, N - 1)),
    lead(Next, N, M, 0),
    Next ! stop,
    receive stop -> ok end,
    Main ! done.

lead(_Next, _N, 0, _V) -> ok;
lead(Next, N, M, V) ->
    Next ! V + 1,
    receive
        Back when Back =:= V + N -> lead(Next, N, M - 1, Back)
    end.

loop(Next) ->
    receive
        stop -> Next ! stop;
        V -> Next ! V + 1, loop(Next)
    end.
