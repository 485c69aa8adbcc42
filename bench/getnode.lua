-- LinkBench's GetNode statement run by sysbench (bench/linkbench_driver.py, row 7b):
-- the same server-side prepared SELECT on the same nodetable as knobtop's built-in
-- driver, through sysbench's C client, so the two differ only in the client.
-- Ids are uniform on 1..--table-size (the built-in driver draws them Zipf-skewed;
-- the whole table is in the buffer pool either way).

sysbench.cmdline.options = {
   tables = {"unused (row 7b passes the point select's options)", 1},
   table_size = {"ids 1..table_size", 10000},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   stmt = con:prepare("SELECT id, type, version, time, data FROM nodetable WHERE id = ?")
   param = stmt:bind_create(sysbench.sql.type.INT)
   stmt:bind_param(param)
end

function event()
   param:set(sysbench.rand.uniform(1, sysbench.opt.table_size))
   stmt:execute()
end

function thread_done()
   stmt:close()
   con:disconnect()
end
