# A PyMySQL client of the todo app whose MySQL 8 traffic Keploy recorded (keploy/samples-java
# spring-mysql-redis): logs in (caching_sha2_password), reads the isolation level, inserts a todo,
# lists the todos; writes what it got to todo-py-out.txt.
import sys
import pymysql

port, password = sys.argv[1], sys.argv[2]
conn = pymysql.connect(host='127.0.0.1', port=int(port), user='yourusername', password=password, database='todoapp', autocommit=True)
with conn.cursor() as c:
    c.execute('SELECT @@session.transaction_isolation')
    iso = c.fetchone()[0]
    c.execute("insert into todo (completed, description, title) values (0, 'Read the Spring Boot documentation and write some sample code', 'Learn Spring Boot')")
    new_id = c.lastrowid
    c.execute('select todo0_.id as id1_0_, todo0_.completed as complete2_0_, todo0_.description as descript3_0_, todo0_.title as title4_0_ from todo todo0_')
    rows = c.fetchall()
conn.close()
with open('todo-py-out.txt', 'w') as f:
    f.write(f"{iso} id={new_id} rows={[(r[0], r[1].hex(), r[3]) for r in rows]}\n")
